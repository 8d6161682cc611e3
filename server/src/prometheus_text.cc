// SPDX-License-Identifier: Apache-2.0
#include "wheel/server/prometheus_text.h"

#include <cassert>
#include <charconv>
#include <cmath>

namespace wheel::server {
namespace {

[[maybe_unused]] bool valid_name(std::string_view name) {
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    if (!letter && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

// Backslash and newline escaped, and the double quote too when `quote` (label values; a HELP
// text keeps its quotes as they are).
std::string escape(std::string_view text, bool quote) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"' && quote) {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string PrometheusText::escape_label_value(std::string_view value) {
  return escape(value, true);
}

std::string PrometheusText::escape_help(std::string_view help) {
  return escape(help, false);
}

std::string PrometheusText::format_double(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buffer[400];  // fixed notation of a double below 1e15 fits easily
  // Plain decimals ("0.0001", not the shorter "1e-04") in the usual range, as Prometheus'
  // own clients write bucket bounds; the shortest round-trip form otherwise.
  const double magnitude = std::fabs(value);
  const bool plain = magnitude == 0 || (magnitude >= 1e-6 && magnitude < 1e15);
  const auto result =
      plain ? std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::fixed)
            : std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, result.ptr);
}

void PrometheusText::family(std::string_view name, std::string_view type, std::string_view help) {
  assert(valid_name(name));
  out_.append("# HELP ").append(name).append(" ").append(escape_help(help)).append("\n");
  out_.append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

void PrometheusText::write_labels(Labels labels) {
  if (labels.size() == 0) return;
  out_ += '{';
  bool first = true;
  for (const auto& [key, value] : labels) {
    assert(valid_name(key) && key.find(':') == std::string_view::npos);
    if (!first) out_ += ',';
    first = false;
    out_.append(key).append("=\"").append(escape_label_value(value)).append("\"");
  }
  out_ += '}';
}

void PrometheusText::sample(std::string_view name, Labels labels, std::uint64_t value) {
  assert(valid_name(name));
  out_.append(name);
  write_labels(labels);
  out_.append(" ").append(std::to_string(value)).append("\n");
}

void PrometheusText::sample_double(std::string_view name, Labels labels, double value) {
  assert(valid_name(name));
  out_.append(name);
  write_labels(labels);
  out_.append(" ").append(format_double(value)).append("\n");
}

void PrometheusText::counter(std::string_view name, std::string_view help, std::uint64_t value) {
  family(name, "counter", help);
  sample(name, {}, value);
}

void PrometheusText::gauge(std::string_view name, std::string_view help, std::uint64_t value) {
  family(name, "gauge", help);
  sample(name, {}, value);
}

void PrometheusText::counter_double(std::string_view name, std::string_view help, double value) {
  family(name, "counter", help);
  sample_double(name, {}, value);
}

void PrometheusText::gauge_double(std::string_view name, std::string_view help, double value) {
  family(name, "gauge", help);
  sample_double(name, {}, value);
}

void PrometheusText::series(std::string_view name, std::string_view type, std::string_view help,
                            std::string_view label, Series series) {
  family(name, type, help);
  for (const auto& [label_value, value] : series) sample(name, {{label, label_value}}, value);
}

void PrometheusText::histogram_samples(std::string_view name, std::span<const double> bounds,
                                       std::span<const std::uint64_t> buckets, std::uint64_t sum,
                                       double base_per_unit) {
  assert(buckets.size() == bounds.size() + 1);
  const std::string bucket = std::string(name) + "_bucket";
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    cumulative += buckets[i];
    const std::string le = i < bounds.size() ? format_double(bounds[i]) : "+Inf";
    sample(bucket, {{"le", le}}, cumulative);
  }
  out_.append(name).append("_sum ");
  out_.append(format_double(static_cast<double>(sum) / base_per_unit)).append("\n");
  sample(std::string(name) + "_count", {}, cumulative);
}

}  // namespace wheel::server
