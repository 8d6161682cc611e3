// SPDX-License-Identifier: Apache-2.0
// Percentile summary of a set of samples (round-trip times, idle-close lateness), the figures
// wheel-load's report gives: p50, p90, p99 and max.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

namespace wheel::load {

struct PercentileSummary {
  std::size_t count = 0;
  double p50 = 0;
  double p90 = 0;
  double p99 = 0;
  double min = 0;
  double max = 0;
};

// The nearest-rank percentile of sorted samples: the smallest sample such that at least
// `percent`% of the samples are <= it (index ceil(percent/100 * n) - 1). No interpolation, so
// every reported figure is a value that was actually measured.
// REQUIRES: `sorted` is non-empty and ascending; 0 < percent <= 100.
double nearest_rank(const std::vector<double>& sorted, double percent);

// Summarizes `samples` (any order; taken by value and sorted).
// Returns std::nullopt when there are no samples: a report then shows null, never a made-up 0.
std::optional<PercentileSummary> summarize(std::vector<double> samples);

// The median of `values` (the mean of the middle two for an even count; the comparisons' figure
// over rounds); 0 when empty.
double median(std::vector<double> values);

}  // namespace wheel::load
