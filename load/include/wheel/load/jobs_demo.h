// SPDX-License-Identifier: Apache-2.0
// The durable-jobs demo of scripts/run-demo.sh (`wheel-jobs-load demo`): wheel-jobs with --dir
// (--fsync always) in a scratch directory; `jobs` delayed jobs, delays drawn from
// [delay_min_s, delay_max_s], put over `connections` pipelined connections; kill -9 the moment
// `kill_after` puts were acknowledged (others still in flight); a restart on the same
// directory; the rest of the puts; then reservers take and delete every job as it falls due.
// It passes when every acknowledged job was reserved (none lost), none before its due time
// (none early: jobs_ledger.h), and nothing else failed. Puts in flight at the kill may or may
// not have been logged: those that come back are counted, never required.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "wheel/load/percentiles.h"

namespace wheel::load {

struct JobsDemoConfig {
  std::string wheel_jobs;  // the wheel-jobs program
  // Scratch directory for the server's data and log; empty: a fresh one under the system's
  // temporary directory, removed when the demo passes (kept and named when it fails).
  std::string work_dir;
  std::uint32_t jobs = 10'000;    // 2 .. 1,000,000
  std::uint32_t connections = 8;  // 1 .. 1,000
  std::uint32_t delay_min_s = 1;  // 1 .. 3600
  std::uint32_t delay_max_s = 5;  // delay_min_s .. 3600
  std::uint32_t kill_after = 0;   // 1 .. jobs - 1; 0: jobs / 2
  // A job not reserved this long after the last put's delay could have ended is lost.
  std::chrono::seconds lost_after{10};  // 1 s .. 1 h
  std::chrono::seconds start_timeout{60};
  // Called after the puts, before the drain, with the server's port and the acknowledged ids:
  // tests plant a fault here (delete a job out of band, put one that comes early). May be empty.
  std::function<void(std::uint16_t port, const std::vector<std::uint64_t>& acknowledged)>
      before_drain;
  // Progress lines (about one a second, and one per step). May be empty.
  std::function<void(const std::string&)> progress;
};

struct JobsDemoResult {
  std::uint64_t acknowledged_before_kill = 0;
  std::uint64_t in_flight_at_kill = 0;  // puts sent, not acknowledged, when the server died
  double restart_s = 0;                 // from the restart's spawn to its first answer
  std::int64_t held_after_restart = 0;  // jobs the restarted server held at its first answer
  std::uint64_t acknowledged = 0;       // in all
  std::uint64_t reserved = 0;           // acknowledged jobs reserved
  std::uint64_t lost = 0;
  std::uint64_t early = 0;
  std::uint64_t duplicates = 0;
  std::uint64_t unacknowledged_kept = 0;  // puts in flight at the kill that came back
  std::vector<std::uint64_t> lost_ids;    // the first ten
  std::vector<std::uint64_t> early_ids;   // the first ten
  std::optional<PercentileSummary> lateness_ms;
  double elapsed_s = 0;
  std::string work_dir;  // kept when the demo failed
  std::string error;     // a step that failed (the server did not start, a put run failed)

  bool passed() const { return error.empty() && lost == 0 && early == 0 && acknowledged > 0; }
};

// Empty when `config` is valid, else what is wrong, naming the field and its range in plain
// numbers. Safe from any thread.
std::string check_jobs_demo(const JobsDemoConfig& config);

// Runs the demo; blocks the calling thread for it (about delay_max_s + a few seconds when it
// passes, up to lost_after more when a job is lost). Spawns and kills only its own server.
// REQUIRES: check_jobs_demo(config) is empty.
JobsDemoResult run_jobs_demo(const JobsDemoConfig& config);

// The report, several lines ending in "result: OK" or "result: FAILED (...)".
std::string format_jobs_demo(const JobsDemoConfig& config, const JobsDemoResult& result);

}  // namespace wheel::load
