// SPDX-License-Identifier: Apache-2.0
// Internal. The delivery-lateness histogram both stores keep (QueueMetrics and the Redis
// handler's metrics, on kLatenessBounds) as the console shows it.
#pragma once

#include "wheel/jobs/console/console_backend.h"
#include "wheel/jobs/model/queue_metrics.h"

namespace wheel::jobs::console {

inline ConsoleHistogram lateness_histogram(const HistogramCounts<kLatenessBounds.size()>& counts) {
  ConsoleHistogram h;
  h.bounds.assign(kLatenessBounds.begin(), kLatenessBounds.end());
  h.counts.assign(counts.buckets.begin(), counts.buckets.end());
  h.count = counts.count();
  h.sum = static_cast<double>(counts.sum) / 1e9;  // nanoseconds -> seconds
  return h;
}

}  // namespace wheel::jobs::console
