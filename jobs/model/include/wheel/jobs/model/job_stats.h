// SPDX-License-Identifier: Apache-2.0
// A job's state and the figures the job model reports of one job and one tube (JobQueue's
// job_stats() and tube_stats(), RedisStore's the same): the model owns them, the protocol prints
// them (beanstalk_stats.h, as stats-job and stats-tube).
//
// Threads: plain values.
#pragma once

#include <cstdint>
#include <string_view>

#include "wheel/jobs/model/millis.h"

namespace wheel::jobs {

enum class JobState : std::uint8_t { kReady, kDelayed, kReserved, kBuried };

// "ready", "delayed", "reserved" or "buried".
std::string_view job_state_name(JobState state) noexcept;

struct JobStats {
  std::uint64_t id = 0;
  std::string_view tube;
  JobState state = JobState::kReady;
  std::uint32_t priority = 0;
  Millis age{0};
  Millis delay{0};
  Millis ttr{0};
  Millis time_left{0};     // reserved or delayed: until the state changes; otherwise 0
  std::uint32_t file = 0;  // earliest log segment holding the job; 0 without a log
  std::uint32_t reserves = 0;
  std::uint32_t timeouts = 0;
  std::uint32_t releases = 0;
  std::uint32_t buries = 0;
  std::uint32_t kicks = 0;
};

struct TubeStats {
  std::string_view name;
  std::uint64_t urgent = 0;  // ready jobs with priority < 1024
  std::uint64_t ready = 0;
  std::uint64_t reserved = 0;
  std::uint64_t delayed = 0;
  std::uint64_t buried = 0;
  std::uint64_t total_jobs = 0;
  std::uint64_t using_count = 0;
  std::uint64_t watching = 0;
  std::uint64_t waiting = 0;
  std::uint64_t cmd_delete = 0;
  std::uint64_t cmd_pause_tube = 0;
  Millis pause{0};
  Millis pause_time_left{0};
};

}  // namespace wheel::jobs
