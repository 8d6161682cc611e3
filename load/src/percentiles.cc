// SPDX-License-Identifier: Apache-2.0
#include "wheel/load/percentiles.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace wheel::load {

double nearest_rank(const std::vector<double>& sorted, double percent) {
  assert(!sorted.empty());
  assert(percent > 0 && percent <= 100);
  const double n = static_cast<double>(sorted.size());
  // The epsilon keeps 90% of 10 samples at rank 9, not 10, despite 0.9 * 10 = 9.000000000000002.
  auto rank = static_cast<std::size_t>(std::ceil(percent / 100.0 * n - 1e-9));
  rank = std::clamp<std::size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

std::optional<PercentileSummary> summarize(std::vector<double> samples) {
  if (samples.empty()) return std::nullopt;
  std::sort(samples.begin(), samples.end());
  PercentileSummary s;
  s.count = samples.size();
  s.p50 = nearest_rank(samples, 50);
  s.p90 = nearest_rank(samples, 90);
  s.p99 = nearest_rank(samples, 99);
  s.min = samples.front();
  s.max = samples.back();
  return s;
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace wheel::load
