// SPDX-License-Identifier: Apache-2.0
// A job as the log stores it: what survives a restart. A reserved job is stored as it was
// before it was reserved (reservations are not durable: after a restart it is ready again).
#pragma once

#include <cstdint>
#include <string>

namespace wheel::jobs {

enum class StoredState : std::uint8_t { kReady = 0, kDelayed = 1, kBuried = 2 };

// What beanstalkd's binlog keeps of a job besides its state (its job record): the delay it was
// last put or released with and its counters, as of the job's last durable change (counts made
// since, by reserves and TTR timeouts, which are not durable, ride with the next change). They
// make stats-job read after a restart as beanstalkd's does after a binlog replay.
struct StoredCounters {
  std::uint64_t delay_ms = 0;
  std::uint32_t reserves = 0, timeouts = 0, releases = 0, buries = 0, kicks = 0;

  friend bool operator==(const StoredCounters&, const StoredCounters&) = default;
};

// A live job's state as of its latest durable change: what a change record (release, bury,
// kick, kick-job: a change that keeps the job's tube and body) carries, and what a put record
// carries besides the job's fixed fields (StoredJob).
struct StoredChange {
  std::uint64_t id = 0;
  StoredState state = StoredState::kReady;
  std::uint32_t priority = 0;
  std::int64_t due_unix_ms = 0;  // when a delayed job becomes ready (wall clock, ms); else 0
  // A new job's put: zero counts and delay_ms = due - created when delayed, else 0 (the record
  // then leaves them out).
  StoredCounters counters;

  friend bool operator==(const StoredChange&, const StoredChange&) = default;
};

// A job as the log keeps it (its put record): its state, and the fields no change alters.
struct StoredJob : StoredChange {
  std::uint64_t ttr_ms = 0;
  std::int64_t created_unix_ms = 0;
  std::string tube;  // at most 255 bytes (the queue allows 200)
  std::string body;  // at most 1 GiB
  // The body's length, set by JobLog::open() also when it leaves `body` empty
  // (JobLogOptions::load_bodies false); not part of ==, and not read by JobLog::put().
  std::uint32_t body_size = 0;
  // Where its put record is (log_index.h's LogPosition), set by JobLog::open(); not part of ==,
  // and not read by JobLog::put().
  std::uint64_t log_position = 0;

  friend bool operator==(const StoredJob& a, const StoredJob& b) {
    return static_cast<const StoredChange&>(a) == static_cast<const StoredChange&>(b) &&
           a.ttr_ms == b.ttr_ms && a.created_unix_ms == b.created_unix_ms && a.tube == b.tube &&
           a.body == b.body;
  }
};

}  // namespace wheel::jobs
