// SPDX-License-Identifier: Apache-2.0
// A pipelined load of job operations against one job server (wheel-jobs, beanstalkd or a Redis
// delay queue; jobs_wire.h says what goes on the wire): `connections` connections on one libuv
// loop, each keeping up to `window` requests in flight. One run is one phase:
//   put      puts jobs with delays drawn from [delay_min_s, delay_max_s] until `count` were
//            acknowledged or `duration` passed; the ids come back in the result.
//   delete   deletes the given ids.
//   lateness (beanstalkd protocol) the delivery lateness of delayed jobs: a probe connection
//            puts one job at a time at `probe_rate` per second with delays from [delay_min_s,
//            delay_max_s] while `connections` reservers reserve and delete every job that
//            becomes ready; a probe's lateness is the time its RESERVED arrived minus the time
//            its put was sent plus its delay (an upper bound of the server's lateness: it
//            includes one network hop). Jobs that were not probes are deleted, not timed.
//   drain    (beanstalkd protocol) `connections` reservers reserve every job that becomes
//            ready, handing each to `on_reserved` as its RESERVED arrives, until `on_reserved`
//            says it has all it waits for or `duration` passed. Jobs are not deleted (a
//            durable delete would put an fsync before the next reserve): they stay reserved
//            until the run's connections close, then are ready again. The caller judges the
//            jobs (jobs_ledger.h).
// Every job body is `body_size` bytes and starts with "wjl <unix_us> <delay_ms> <probe>"
// (when it fits), so a reserver can tell a probe and when it was due; the rest is 'x'.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "wheel/load/jobs_wire.h"
#include "wheel/load/percentiles.h"

namespace wheel::load {

// The longest delay or TTR a run may use: 30 days.
inline constexpr std::uint32_t kMaxJobsDelayS = 30 * 24 * 3600;

enum class JobsPhase : std::uint8_t { kPut, kDelete, kLateness, kDrain };

struct JobsLoadConfig {
  JobsProtocol protocol = JobsProtocol::kBeanstalk;
  std::string host = "127.0.0.1";  // numeric IPv4 or IPv6 address
  std::uint16_t port = 11300;
  JobsPhase phase = JobsPhase::kPut;
  std::uint32_t connections = 8;  // 1 .. 10,000
  std::uint32_t window = 64;      // requests in flight per connection, 1 .. 100,000
  // put: stop after this many acknowledged puts (0 = no count limit).
  std::uint64_t count = 0;
  // put, lateness: stop after this long (0 = no time limit; put needs count or duration).
  std::chrono::milliseconds duration{0};
  std::uint32_t body_size = 100;  // 1 .. 1 MiB
  std::uint32_t delay_min_s = 3600;
  std::uint32_t delay_max_s = 3600;       // delay_min_s .. kMaxJobsDelayS
  std::uint32_t ttr_s = 60;               // 1 .. kMaxJobsDelayS
  std::vector<std::uint64_t> delete_ids;  // delete: the jobs to delete
  double probe_rate = 200;                // lateness: probes put per second, 1 .. 100,000
  // lateness: probes are put during the first probe_span of the run (so that every probe's
  // delay ends inside it: set duration >= probe_span + delay_max_s + slack).
  std::chrono::milliseconds probe_span{10'000};
  std::uint64_t seed = 1;  // of the delays drawn
  // No reply for this long while requests are in flight ends the run with an error.
  std::chrono::milliseconds stall_timeout{60'000};
  // Called about once a second with a one-line progress text (e.g. logged). May be empty.
  std::function<void(const std::string&)> progress;
  // put: called on the run's loop after each acknowledged put with the count so far (the
  // durable-jobs demo kills the server from here at an exact count). May be empty.
  std::function<void(std::uint64_t acknowledged)> on_acknowledged;
  // drain: called on the run's loop with each reserved job's id and body when its RESERVED
  // arrives; returns true once the drain has every job it waits for. Required for drain.
  std::function<bool(std::uint64_t id, std::string_view body)> on_reserved;
};

struct JobsLoadResult {
  std::uint64_t sent = 0;          // requests sent (puts, deletes or probe puts)
  std::uint64_t acknowledged = 0;  // INSERTED / DELETED replies
  std::uint64_t not_found = 0;     // deletes answered NOT_FOUND
  std::uint64_t error_replies = 0;
  std::string first_error_reply;  // the first error reply, verbatim
  double elapsed_s = 0;           // from the first request to the last counted reply
  double per_second = 0;          // acknowledged / elapsed_s
  // Time from a request's send to its reply, milliseconds (put and delete phases).
  std::optional<PercentileSummary> reply_ms;
  std::vector<std::uint64_t> ids;  // put: the ids acknowledged, in reply order
  // lateness: probes timed, probes put but never reserved, jobs reserved that were not probes.
  std::optional<PercentileSummary> lateness_ms;
  std::uint64_t probes_put = 0;
  std::uint64_t probes_missing = 0;
  std::uint64_t others_reserved = 0;
  // drain: jobs reserved, and whether on_reserved said it had them all.
  std::uint64_t reserved = 0;
  bool drained = false;
  // Empty on success; else why the run failed (connect refused, stalled, protocol fault).
  std::string error;
};

// Checks `config` (ranges above, phase needs); empty when valid, else a message naming the
// field and its range ("window must be from 1 to 100000"). Safe from any thread.
std::string check_jobs_load(const JobsLoadConfig& config);

// Runs one phase on a loop of its own and returns what it measured. Blocks the calling thread
// for the run. REQUIRES: check_jobs_load(config) is empty.
JobsLoadResult run_jobs_load(const JobsLoadConfig& config);

// The body of a job: "wjl <unix_us> <delay_ms> <probe>" then 'x' up to `size` bytes; only 'x's
// when the header does not fit. Safe from any thread.
std::string make_job_body(std::uint32_t size, std::int64_t unix_us, std::uint64_t delay_ms,
                          bool probe);

// Reads a body made by make_job_body: false when it has no header.
bool parse_job_body(std::string_view body, std::int64_t& unix_us, std::uint64_t& delay_ms,
                    bool& probe);

}  // namespace wheel::load
