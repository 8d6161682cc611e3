// SPDX-License-Identifier: Apache-2.0
// Internal. What the files of JobQueue share: its bounds and two conversions.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string_view>

#include "wheel/jobs/model/job.h"
#include "wheel/loop_wheel.h"

namespace wheel::jobs::queue_detail {

inline constexpr std::uint32_t kUrgentBelow = 1024;  // beanstalkd's URGENT_THRESHOLD
// Job::heap_pos is 32 bits.
inline constexpr std::uint64_t kMaxJobs = std::uint64_t{1} << 32;

// The queue's own copy of a body (memory only): one allocation of exactly its size.
inline void hold_body(Job* job, std::string_view body) {
  job->body_size = static_cast<std::uint32_t>(body.size());
  if (body.empty()) return;
  job->body_data = new char[body.size()];  // ~Job deletes it
  std::memcpy(job->body_data, body.data(), body.size());
}

// A time on the queue's clock as the wheel's (clamped: the wheel counts nanoseconds).
inline LoopWheel::Time to_wheel(Millis t) {
  constexpr std::int64_t kMaxMs = std::numeric_limits<std::int64_t>::max() / 1'000'000;
  if (t.count() >= kMaxMs) return LoopWheel::Time::max();
  if (t.count() <= -kMaxMs) return LoopWheel::Time::min();
  return std::chrono::duration_cast<LoopWheel::Time>(t);
}

}  // namespace wheel::jobs::queue_detail
