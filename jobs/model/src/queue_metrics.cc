// SPDX-License-Identifier: Apache-2.0
// QueueMetrics' names.
#include "wheel/jobs/model/queue_metrics.h"

#include <iterator>

namespace wheel::jobs {

std::string_view change_counter_name(ChangeCounter kind) {
  // In ChangeCounter's order; a value outside it (a cast from a bad number) reads "unknown".
  constexpr std::string_view kNames[] = {"put",    "reserve", "release",     "bury",    "kick",
                                         "delete", "touch",   "delay_ended", "timeout", "hang_up"};
  static_assert(std::size(kNames) == kChangeCounters &&
                static_cast<std::size_t>(ChangeCounter::kHangUp) + 1 == kChangeCounters);
  const auto i = static_cast<std::size_t>(kind);
  return i < std::size(kNames) ? kNames[i] : "unknown";
}

}  // namespace wheel::jobs
