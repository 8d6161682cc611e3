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

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "wheel/jobs/beanstalk_request.h"
#include "wheel/jobs/job_counts.h"

namespace wheel::jobs::beanstalk {

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

// binlog-max-size as beanstalkd reports it without -s (also when it keeps no binlog).
inline constexpr std::int64_t kBinlogMaxSize = 10'485'760;

// Command counts of the stats reply, one per command (cumulative since the process started).
struct CommandCounts {
  std::uint64_t put = 0, peek = 0, peek_ready = 0, peek_delayed = 0, peek_buried = 0, reserve = 0,
                reserve_with_timeout = 0, delete_ = 0, release = 0, use = 0, watch = 0, ignore = 0,
                bury = 0, kick = 0, touch = 0, stats = 0, stats_job = 0, stats_tube = 0,
                list_tubes = 0, list_tube_used = 0, list_tubes_watched = 0, pause_tube = 0;
};

// Counts `request` in `counts` as beanstalkd 1.12 does: reserve-job as a reserve, kick-job as a
// kick; quit and a request that did not parse not at all.
void count_command(CommandCounts& counts, const Request& request);

// The job counts (JobCounts) and the rest of the stats reply.
struct ServerStats : JobCounts {
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

// A count of a stats reply and its YAML key, e.g. {"cmd-put", &CommandCounts::put}. The tables
// below list them in the order beanstalkd prints them; the writers below print from them, and a
// reader (a client, the conformance test) may parse with them.
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

// stats' cmd-* lines.
inline constexpr StatsKey<CommandCounts> kCommandCountKeys[] = {
    {"cmd-put", &CommandCounts::put},
    {"cmd-peek", &CommandCounts::peek},
    {"cmd-peek-ready", &CommandCounts::peek_ready},
    {"cmd-peek-delayed", &CommandCounts::peek_delayed},
    {"cmd-peek-buried", &CommandCounts::peek_buried},
    {"cmd-reserve", &CommandCounts::reserve},
    {"cmd-reserve-with-timeout", &CommandCounts::reserve_with_timeout},
    {"cmd-delete", &CommandCounts::delete_},
    {"cmd-release", &CommandCounts::release},
    {"cmd-use", &CommandCounts::use},
    {"cmd-watch", &CommandCounts::watch},
    {"cmd-ignore", &CommandCounts::ignore},
    {"cmd-bury", &CommandCounts::bury},
    {"cmd-kick", &CommandCounts::kick},
    {"cmd-touch", &CommandCounts::touch},
    {"cmd-stats", &CommandCounts::stats},
    {"cmd-stats-job", &CommandCounts::stats_job},
    {"cmd-stats-tube", &CommandCounts::stats_tube},
    {"cmd-list-tubes", &CommandCounts::list_tubes},
    {"cmd-list-tube-used", &CommandCounts::list_tube_used},
    {"cmd-list-tubes-watched", &CommandCounts::list_tubes_watched},
    {"cmd-pause-tube", &CommandCounts::pause_tube},
};

// stats' counts after the cmd-* lines, up to the pid.
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
