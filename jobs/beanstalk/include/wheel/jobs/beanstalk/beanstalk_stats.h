// SPDX-License-Identifier: Apache-2.0
// The YAML bodies of beanstalkd's OK replies (stats-job, stats-tube, stats, list-tubes,
// list-tubes-watched), byte for byte as beanstalkd 1.12 prints them (its keys, order and
// quoting: only the version is quoted; tube names and the uname strings are not, as in 1.12),
// so that client libraries that parse them (with js-yaml, PyYAML, ...) read ours as theirs.
// The caller fills the structs; append_ok() (beanstalk_reply.h) wraps a body into its reply.
//
// Times are milliseconds here and printed in whole seconds, rounded down, as beanstalkd prints
// them (a 250 ms delay shows as "delay: 0").
//
// Threads: pure functions, safe from any thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <tuple>

#include "wheel/jobs/beanstalk/beanstalk_request.h"
#include "wheel/jobs/model/job_stats.h"
#include "wheel/jobs/model/state_counts.h"

namespace wheel::jobs::beanstalk {

// binlog-max-size as beanstalkd reports it without -s (also when it keeps no binlog).
inline constexpr std::int64_t kBinlogMaxSize = 10'485'760;

// The commands the stats reply counts, in the order beanstalkd 1.12 prints them. Each count's
// key is "cmd-" and the command's name ("cmd-put"); count_command() says which request counts
// as which.
using CountedCommands =
    std::tuple<Put, Peek, PeekReady, PeekDelayed, PeekBuried, Reserve, ReserveWithTimeout, Delete,
               Release, Use, Watch, Ignore, Bury, Kick, Touch, Stats, StatsJob, StatsTube,
               ListTubes, ListTubeUsed, ListTubesWatched, PauseTube>;

// The names of CountedCommands, in its order: "put", "peek", ...
inline constexpr auto kCountedCommands = []<class... C>(std::tuple<C...>*) {
  return std::array<std::string_view, sizeof...(C)>{command_name<C>()...};
}(static_cast<CountedCommands*>(nullptr));

// The place of command `name` in kCountedCommands; kCountedCommands.size() when not there.
constexpr std::size_t counted_command_index(std::string_view name) noexcept {
  std::size_t i = 0;
  while (i < kCountedCommands.size() && kCountedCommands[i] != name) ++i;
  return i;
}

// Command counts of the stats reply (cumulative since the process started): by_command[i] is
// the count of kCountedCommands[i].
struct CommandCounts {
  std::array<std::uint64_t, kCountedCommands.size()> by_command{};

  // The count of the command named `name` ("put", "pause-tube"). Throws std::out_of_range for
  // a name not in kCountedCommands.
  std::uint64_t& operator[](std::string_view name) {
    return by_command.at(counted_command_index(name));
  }
  std::uint64_t operator[](std::string_view name) const {
    return by_command.at(counted_command_index(name));
  }
};

// Counts `request` in `counts` as beanstalkd 1.12 does: reserve-job as a reserve, kick-job as a
// kick; quit and a request that did not parse not at all.
void count_command(CommandCounts& counts, const Request& request);

// The job counts (StateCounts) and the rest of the stats reply.
struct ServerStats : StateCounts {
  CommandCounts commands;
  std::uint64_t max_job_size = 0;
  std::uint64_t connections = 0, producers = 0, workers = 0, waiting = 0;
  std::uint64_t total_connections = 0;
  std::int64_t pid = 0;
  std::string_view version;  // printed quoted, as in 1.12
  std::chrono::microseconds rusage_user{0};
  std::chrono::microseconds rusage_system{0};
  std::chrono::seconds uptime{0};
  std::int64_t binlog_oldest_index = 0, binlog_current_index = 0;
  std::int64_t binlog_records_migrated = 0, binlog_records_written = 0;
  std::int64_t binlog_max_size = 0;
  bool draining = false;
  std::string_view id;                      // random per process, hex
  std::string_view hostname, os, platform;  // uname(2); printed as they are, as in 1.12
};

// A count of a stats reply and its YAML key, e.g. {"total-jobs", &TubeStats::total_jobs}. The
// tables below list them in the order beanstalkd prints them; the writers below print from them,
// and a reader (a client, the conformance test) may parse with them.
template <class Stats>
struct StatsKey {
  std::string_view key;
  std::uint64_t Stats::*field;
};

// The current-jobs-* lines of stats-tube (TubeStats) and stats (ServerStats).
template <class Stats>
inline constexpr StatsKey<Stats> kCurrentJobsKeys[] = {
    {"current-jobs-urgent", &Stats::urgent},     {"current-jobs-ready", &Stats::ready},
    {"current-jobs-reserved", &Stats::reserved}, {"current-jobs-delayed", &Stats::delayed},
    {"current-jobs-buried", &Stats::buried},
};

// stats-tube's counts after the current-jobs-* lines.
inline constexpr StatsKey<TubeStats> kTubeCountKeys[] = {
    {"total-jobs", &TubeStats::total_jobs},     {"current-using", &TubeStats::using_count},
    {"current-watching", &TubeStats::watching}, {"current-waiting", &TubeStats::waiting},
    {"cmd-delete", &TubeStats::cmd_delete},     {"cmd-pause-tube", &TubeStats::cmd_pause_tube},
};

// stats' counts after the cmd-* lines (kCountedCommands), up to the pid.
inline constexpr StatsKey<ServerStats> kServerCountKeys[] = {
    {"job-timeouts", &ServerStats::job_timeouts},
    {"total-jobs", &ServerStats::total_jobs},
    {"max-job-size", &ServerStats::max_job_size},
    {"current-tubes", &ServerStats::tubes},
    {"current-connections", &ServerStats::connections},
    {"current-producers", &ServerStats::producers},
    {"current-workers", &ServerStats::workers},
    {"current-waiting", &ServerStats::waiting},
    {"total-connections", &ServerStats::total_connections},
};

// Each returns the YAML document without the final "\r\n" (append_ok adds it).
std::string job_stats_yaml(const JobStats& stats);
std::string tube_stats_yaml(const TubeStats& stats);
std::string server_stats_yaml(const ServerStats& stats);
// "---\n- default\n- emails\n" (list-tubes, list-tubes-watched). Tube names need no quoting.
std::string tube_list_yaml(std::span<const std::string_view> names);

}  // namespace wheel::jobs::beanstalk
