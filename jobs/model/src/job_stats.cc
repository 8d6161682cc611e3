// SPDX-License-Identifier: Apache-2.0
#include "wheel/jobs/model/job_stats.h"

#include <cstddef>
#include <iterator>

namespace wheel::jobs {

std::string_view job_state_name(JobState state) noexcept {
  // In JobState's order; a value outside it (a cast from a bad number) reads "ready".
  constexpr std::string_view kNames[] = {"ready", "delayed", "reserved", "buried"};
  static_assert(std::size(kNames) == static_cast<std::size_t>(JobState::kBuried) + 1);
  const auto i = static_cast<std::size_t>(state);
  return i < std::size(kNames) ? kNames[i] : "ready";
}

}  // namespace wheel::jobs
