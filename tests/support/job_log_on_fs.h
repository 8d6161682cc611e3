// SPDX-License-Identifier: Apache-2.0
// A job log on the fault-injecting file system (fault_injection_fs.h), as the jobs tests start
// one: the options, and opening it with the error shown when that fails.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>

#include "support/fault_injection_fs.h"
#include "wheel/jobs/log/job_log.h"

namespace wheel::jobs::testing {

// A log in /log on `fs`, in segments of `segment_bytes` with `reserve_bytes` set aside, its
// syncs run inline (no sync thread) so that a seed gives the same cut points on every run.
inline JobLogOptions log_options(FaultInjectionFs& fs, std::uint64_t segment_bytes,
                                 std::uint64_t reserve_bytes = 0) {
  JobLogOptions o;
  o.dir = "/log";
  o.fs = &fs;
  o.segment_bytes = segment_bytes;
  o.reserve_bytes = reserve_bytes;
  o.sync_thread = false;
  return o;
}

// JobLog::open(options, r); when it fails, a failed EXPECT showing the error, and nullptr.
inline std::unique_ptr<JobLog> open_log(const JobLogOptions& options, Recovered* r) {
  std::string error;
  auto log = JobLog::open(options, r, &error);
  EXPECT_TRUE(log) << error;
  return log;
}

}  // namespace wheel::jobs::testing
