// SPDX-License-Identifier: Apache-2.0
// StateCounts: the job counts of beanstalkd's stats reply (current-jobs-*, job-timeouts,
// total-jobs, current-tubes). A JobQueue keeps them in memory (QueueCounters, job_queue.h), a
// fleet keeps them in Redis (StoreTotals, redis_store_results.h) and the stats reply prints them
// (beanstalk::ServerStats, beanstalk_stats.h): all three are StateCounts, so one assignment copies
// the counts from either source into the reply.
//
// Plain values, safe to copy between threads.
#pragma once

#include <cstdint>

namespace wheel::jobs {

struct StateCounts {
  std::uint64_t urgent = 0;  // ready jobs with priority < 1024
  std::uint64_t ready = 0, reserved = 0, delayed = 0, buried = 0;
  std::uint64_t job_timeouts = 0;  // reservations whose TTR ran out
  std::uint64_t total_jobs = 0;    // jobs put
  std::uint64_t tubes = 0;         // tubes that exist
};

}  // namespace wheel::jobs
