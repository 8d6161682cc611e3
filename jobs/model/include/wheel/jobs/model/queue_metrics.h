// SPDX-License-Identifier: Apache-2.0
// QueueMetrics: what a JobQueue (job_queue.h) counts for a Prometheus scrape, kept as it works
// at a cost of a few loads and stores per change (no allocation, no clock: the queue's `now`).
//
//   changes[kind]      — job changes since the start, by kind (ChangeCounter); rates come from
//                        the scraper (changes per second).
//   delivery_lateness  — per job that became ready because its delay ended (put or release
//                        with a delay) and was then reserved: reserved-at minus due-at. This is
//                        what a delayed-job user waits for beyond the delay: the wheel's lateness
//                        plus the time no worker was free.
//   delay_lateness     — per delay end: made-ready-at minus due-at, the wheel's (and the loop's)
//                        part alone.
//   ready_wait         — per reserve of a ready job: reserved-at minus the moment it became
//                        ready (put, release, kick, delay end, TTR expiry, a worker gone).
// Delayed jobs kicked, reserved by id or deleted before they are reserved add no lateness; a
// job reloaded from the log already overdue is ready at once without lateness (its delay
// ended while the server was down). Times are the queue's milliseconds, so values are whole
// milliseconds.
//
// Threads: written by the queue's thread. The histograms may be read from any thread
// (atomics); the change counts on the queue's thread only.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "wheel/metrics_histogram.h"

namespace wheel::jobs {

// Lateness and waits: 1 ms (the queue's resolution) to 5 minutes.
inline constexpr std::array<double, 16> kLatenessBounds = {
    0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 300};

// The kinds of job change counted.
enum class ChangeCounter : std::uint8_t {
  kPut,         // put
  kReserve,     // reserve, reserve-with-timeout, reserve-job, a blocked reserve served
  kRelease,     // release (to ready or delayed)
  kBury,        // bury
  kKick,        // kick, kick-job (one per job)
  kDelete,      // delete
  kTouch,       // touch
  kDelayEnded,  // a delayed job became ready by itself
  kTimeout,     // a reservation's TTR ran out: back to ready
  kHangUp,      // a reserved job went back to ready because its client closed
};
inline constexpr std::size_t kChangeCounters = 10;

// The label value of `kind`: "put", "reserve", "release", "bury", "kick", "delete", "touch",
// "delay_ended", "timeout", "hang_up".
std::string_view change_counter_name(ChangeCounter kind);

struct QueueMetrics {
  std::array<std::uint64_t, kChangeCounters> changes{};
  MetricsHistogram<kLatenessBounds.size()> delivery_lateness{kLatenessBounds};
  MetricsHistogram<kLatenessBounds.size()> delay_lateness{kLatenessBounds};
  MetricsHistogram<kLatenessBounds.size()> ready_wait{kLatenessBounds};

  std::uint64_t change_count(ChangeCounter kind) const {
    return changes[static_cast<std::size_t>(kind)];
  }
  void count(ChangeCounter kind) { ++changes[static_cast<std::size_t>(kind)]; }
};

}  // namespace wheel::jobs
