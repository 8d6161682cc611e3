// SPDX-License-Identifier: Apache-2.0
// PrometheusText: writes the Prometheus text exposition format, version 0.0.4 (the body of a
// scrape, served with kPrometheusContentType). Each family gets its "# HELP" and "# TYPE"
// lines before its samples; label values and help texts are escaped as the format requires
// (label values: backslash, double quote, newline; help: backslash, newline); histograms are
// written as cumulative _bucket{le="..."} lines ending with le="+Inf", then _sum and _count.
//
// It writes what it is given: callers pass metric and label names that match
// [a-zA-Z_:][a-zA-Z0-9_:]* (asserted in debug builds) and write each family once, with all
// its samples together. Not thread-safe; one object per scrape.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "wheel/server/histogram_bounds.h"

namespace wheel::server {

inline constexpr std::string_view kPrometheusContentType =
    "text/plain; version=0.0.4; charset=utf-8";

class PrometheusText {
 public:
  using Labels = std::initializer_list<std::pair<std::string_view, std::string_view>>;
  // (label value, sample value) pairs of one family that varies by one label.
  using Series = std::initializer_list<std::pair<std::string_view, std::uint64_t>>;

  // "# HELP name help" and "# TYPE name type" (type: counter, gauge or histogram).
  void family(std::string_view name, std::string_view type, std::string_view help);
  // "name{labels} value" with an integer value.
  void sample(std::string_view name, Labels labels, std::uint64_t value);
  // "name{labels} value" with a float value, written as format_double() does.
  void sample_double(std::string_view name, Labels labels, double value);
  // A family of one unlabelled sample: family(name, "counter" or "gauge", help), then
  // "name value". The name is written once, so the family and its sample cannot disagree.
  void counter(std::string_view name, std::string_view help, std::uint64_t value);
  void gauge(std::string_view name, std::string_view help, std::uint64_t value);
  void counter_double(std::string_view name, std::string_view help, double value);
  void gauge_double(std::string_view name, std::string_view help, double value);
  // A family that varies by one label: family(name, type, help), then for each (v, n) of
  // series, in order, "name{label="v"} n".
  void series(std::string_view name, std::string_view type, std::string_view help,
              std::string_view label, Series series);
  // The samples of a histogram family already announced with family(name, "histogram", ...):
  // bounds in shown units, counts as read from a MetricsHistogram whose values are
  // `base_per_unit` base units per shown unit (1e9: seconds from nanoseconds; 1: sizes).
  template <std::size_t N>
  void histogram(std::string_view name, const std::array<double, N>& bounds,
                 const HistogramCounts<N>& counts, double base_per_unit = 1e9) {
    histogram_samples(name, std::span<const double>(bounds),
                      std::span<const std::uint64_t>(counts.buckets), counts.sum, base_per_unit);
  }

  // A histogram family of one series: family(name, "histogram", help), then its samples.
  template <std::size_t N>
  void histogram(std::string_view name, std::string_view help, const std::array<double, N>& bounds,
                 const HistogramCounts<N>& counts, double base_per_unit = 1e9) {
    family(name, "histogram", help);
    histogram(name, bounds, counts, base_per_unit);
  }

  // The text so far.
  const std::string& text() const { return out_; }
  std::string take() { return std::move(out_); }

  // A label value escaped for the format: \ -> \\, " -> \", newline -> \n.
  static std::string escape_label_value(std::string_view value);
  // A HELP text escaped for the format: \ -> \\, newline -> \n.
  static std::string escape_help(std::string_view help);
  // A float as the format writes it: shortest round-trip text, "+Inf", "-Inf" or "NaN".
  static std::string format_double(double value);

 private:
  void histogram_samples(std::string_view name, std::span<const double> bounds,
                         std::span<const std::uint64_t> buckets, std::uint64_t sum,
                         double base_per_unit);
  void write_labels(Labels labels);
  std::string out_;
};

}  // namespace wheel::server
