// SPDX-License-Identifier: Apache-2.0
// ConsoleBackend: what the web console (console_service.h) asks of a job store, in one interface
// that both stores implement: the local JobQueue (memory only or on the log: queue_console.h)
// and the Redis store shared by a fleet (redis_console.h). The service knows only this face, so
// every page and every /api call works the same on either.
//
// Every call answers through its Done callback, once, on the loop thread: at once for the local
// queue, after Redis answered for the store. A change (kick, delete, pause, put) answers once it
// is as durable as a protocol client's reply would be (the log's sync under its --fsync policy,
// Redis's reply and its replicas' WAIT).
//
// Bounds are the caller's: a list names how many jobs and how many bytes of each body; a search
// names how many jobs it may look at. A backend never reads more.
//
// Threads: loop thread only (the loop of the store it serves).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "wheel/jobs/model/job_stats.h"
#include "wheel/jobs/model/millis.h"

namespace wheel::jobs::console {

// How a call ended; the service maps each to an HTTP status.
enum class ConsoleStatus : std::uint8_t {
  kOk,
  kNotFound,     // no such job or tube (404)
  kFull,         // the store has no room, or drains (507)
  kUnavailable,  // the store cannot answer now: a log behind its disk, Redis away (503)
  kError,        // anything else (500)
};

struct ConsoleAnswer {
  ConsoleStatus status = ConsoleStatus::kOk;
  std::string error;  // not kOk: why, for a person
};

// One tube's figures. Counters are totals since the store began; the service turns them into
// rates between two overviews.
struct ConsoleTube {
  std::string name;
  std::uint64_t ready = 0, delayed = 0, reserved = 0, buried = 0, urgent = 0;
  bool paused = false;
  std::int64_t pause_left_ms = 0;
  std::uint64_t puts = 0;                   // jobs ever put into it (stats-tube's total-jobs)
  std::optional<std::uint64_t> deliveries;  // reserves of its jobs; nullopt: not counted
  // How long the job at the head of the ready queue (the next a reserve takes: lowest priority,
  // then oldest) has been ready; nullopt: no ready job, or the store does not know.
  std::optional<std::int64_t> head_wait_ms;
  // How long its longest-waiting ready job has been ready, whatever its priority; nullopt: no
  // ready job, or the store does not know (the local queue keeps no order by ready time).
  std::optional<std::int64_t> oldest_ready_ms;
  std::uint64_t using_count = 0, watching = 0, waiting = 0;  // this node's clients
};

// A job as a list shows it (body cut to the list's preview) or as its page shows it (whole).
struct ConsoleJob {
  std::uint64_t id = 0;
  std::string tube;
  JobState state = JobState::kReady;
  std::uint32_t priority = 0;
  std::int64_t age_ms = 0, delay_ms = 0, ttr_ms = 0, time_left_ms = 0;
  std::uint32_t reserves = 0, timeouts = 0, releases = 0, buries = 0, kicks = 0;
  std::uint64_t body_size = 0;  // the whole body's bytes
  std::string body;             // its first bytes (a preview) or all of them
  bool stats_known = true;      // false in lists that carry no stats-job figures
};

// A histogram of delivery lateness (queue_metrics.h's): counts per bucket, the last one +Inf.
struct ConsoleHistogram {
  std::vector<double> bounds;         // seconds, ascending
  std::vector<std::uint64_t> counts;  // bounds.size() + 1
  std::uint64_t count = 0;
  double sum = 0;  // seconds
};

// The lateness of one tick of the service (console_service.h): how many deliveries in it and their
// percentiles (seconds, bucket interpolation as Prometheus's histogram_quantile; -1: above the last
// bound).
struct LatenessPoint {
  std::int64_t at_ms = 0;  // Unix ms
  std::uint64_t count = 0;
  double p50 = 0, p90 = 0, p99 = 0;
};

struct ConsoleOverview : ConsoleAnswer {
  std::vector<ConsoleTube> tubes;  // in the store's tube order (list-tubes), at most max_tubes
  std::uint64_t tubes_total = 0;   // tubes that exist, listed or not
  std::uint64_t connections = 0;   // this node's clients
  std::uint64_t waiting = 0;       // this node's clients blocked in a reserve
  std::uint64_t ready = 0, delayed = 0, reserved = 0, buried = 0;  // every tube's
};

struct ConsoleTubeView : ConsoleAnswer {
  ConsoleTube tube;
  // A page of the jobs of each state in the order a reserve, the clock and a kick take them.
  std::vector<ConsoleJob> ready, delayed, buried;
};

struct ConsoleSearch : ConsoleAnswer {
  std::vector<ConsoleJob> hits;  // in scan order, at most the caller's max
  std::uint64_t scanned = 0;     // jobs whose body was looked at
  bool complete = false;         // every job of the tube was looked at
};

struct ConsoleJobView : ConsoleAnswer {
  ConsoleJob job;
};

struct ConsoleChange : ConsoleAnswer {
  std::uint64_t value = 0;  // kick: jobs kicked; put: the new id
};

struct ConsolePut {
  std::uint32_t priority = 0;
  Millis delay{0};
  Millis ttr{0};  // 0 becomes a second, as in put
  std::string body;
};

// Indexes the three lists of a tube's jobs: ready, delayed, buried.
enum ConsoleList : std::size_t { kReadyList, kDelayedList, kBuriedList };

struct ConsoleLimits {
  std::size_t jobs = 10;      // per state
  std::size_t preview = 200;  // bytes of each body
  // A tube's lists (ConsoleList): how many jobs of each, in its order, come before the page.
  std::array<std::size_t, 3> offset{};
};

class ConsoleBackend {
 public:
  template <class T>
  using Done = std::function<void(T&&)>;

  virtual ~ConsoleBackend() = default;
  // "memory", "log" or "redis".
  virtual std::string_view kind() const = 0;
  // Every tube (at most `max_tubes`) with its figures and the totals.
  virtual void overview(std::size_t max_tubes, Done<ConsoleOverview> done) = 0;
  // A tube's figures and a page of the jobs of each state: `limits.jobs` jobs after the first
  // `limits.offset[state]` in its order (kNotFound: no such tube).
  virtual void tube(std::string_view name, ConsoleLimits limits, Done<ConsoleTubeView> done) = 0;
  // Jobs of `tube` whose body holds `needle` (bytes, case-sensitive), looking at no more than
  // `scan` jobs (ready, then delayed, then buried), at most `max_hits` found.
  virtual void search(std::string_view tube, std::string_view needle, std::size_t scan,
                      ConsoleLimits limits, Done<ConsoleSearch> done) = 0;
  // stats-job and the whole body.
  virtual void job(std::uint64_t id, Done<ConsoleJobView> done) = 0;
  // Up to `bound` jobs of `tube` to ready: buried ones if any, else delayed ones.
  virtual void kick(std::string_view tube, std::uint64_t bound, Done<ConsoleChange> done) = 0;
  // One buried or delayed job to ready.
  virtual void kick_job(std::uint64_t id, Done<ConsoleChange> done) = 0;
  // Deletes a ready, delayed or buried job (a reserved one is its worker's: kNotFound).
  virtual void remove(std::uint64_t id, Done<ConsoleChange> done) = 0;
  // pause-tube for `delay`; 0 resumes.
  virtual void pause(std::string_view tube, Millis delay, Done<ConsoleChange> done) = 0;
  // Moves up to `count` jobs of `from` in state `list`, the first in its order, into `to`
  // (created if need be): each is put there anew (a new id) with its body, priority and TTR,
  // ready, or delayed for what was left of its delay, and then deleted from `from`, so that a
  // job is never in neither tube. value = jobs moved. A refusal (no room: kFull) stops the move
  // after the jobs moved so far, and says how many in `error`.
  virtual void move(std::string_view from, std::string_view to, ConsoleList list,
                    std::uint64_t count, Done<ConsoleChange> done) = 0;
  // put into `tube` (created if need be).
  virtual void put(std::string_view tube, ConsolePut put, Done<ConsoleChange> done) = 0;
  // Delivery lateness so far: reserved-at minus due-at of each delayed job reserved (this node's
  // deliveries). Synchronous: a copy of counters the store keeps anyway.
  virtual ConsoleHistogram lateness() const = 0;
};

}  // namespace wheel::jobs::console
