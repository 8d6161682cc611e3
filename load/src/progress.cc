// SPDX-License-Identifier: Apache-2.0
#include "wheel/load/progress.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <iterator>

namespace wheel::load {

namespace {

// The counts of a Progress (all but elapsed_s), in the order encode_progress() writes them.
constexpr std::uint64_t Progress::*kCounts[] = {
    &Progress::requested, &Progress::connected, &Progress::active_open,  &Progress::idle_open,
    &Progress::closed,    &Progress::errors,    &Progress::churn_cycles, &Progress::mix_failures,
};

}  // namespace

Progress& Progress::operator+=(const Progress& o) {
  elapsed_s = std::max(elapsed_s, o.elapsed_s);
  for (const auto count : kCounts) this->*count += o.*count;
  return *this;
}

std::string format_progress(const Progress& p) {
  std::string line = fmt::format(
      "wheel-load {:5.1f}s: connected {}/{}, active open {}, idle open {}, closed by server {}, "
      "errors {}",
      p.elapsed_s, p.connected, p.requested, p.active_open, p.idle_open, p.closed, p.errors);
  if (p.churn_cycles > 0 || p.mix_failures > 0) {
    line += fmt::format(", churn cycles {}, mix failures {}", p.churn_cycles, p.mix_failures);
  }
  return line;
}

std::string encode_progress(const Progress& p) {
  std::string text = fmt::format("{:.3f}", p.elapsed_s);
  for (const auto count : kCounts) fmt::format_to(std::back_inserter(text), " {}", p.*count);
  return text;
}

bool decode_progress(const std::string& text, Progress& p) {
  Progress decoded;
  int used = 0;
  if (std::sscanf(text.c_str(), "%lf%n", &decoded.elapsed_s, &used) != 1) return false;
  const char* rest = text.c_str() + used;
  for (const auto count : kCounts) {
    unsigned long long value = 0;
    if (std::sscanf(rest, " %llu%n", &value, &used) != 1) return false;
    decoded.*count = value;
    rest += used;
  }
  p = decoded;
  return true;
}

}  // namespace wheel::load
