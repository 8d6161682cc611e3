// SPDX-License-Identifier: Apache-2.0
// What the Redis store's commands answer (redis_store.h): a status with Redis's clock, and per
// command the job, the change or the counts. Plain values, safe to move between threads.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "wheel/jobs/beanstalk/beanstalk_stats.h"
#include "wheel/jobs/model/state_counts.h"

namespace wheel::jobs {

enum class StoreStatus : std::uint8_t {
  kOk,
  kNotFound,     // no such job, or not in a state (or lease) the command needs
  kOutOfMemory,  // Redis refused the write (maxmemory)
  kError,        // Redis unavailable, timed out or failed: `error` says which
};

struct StoreResult {
  StoreStatus status = StoreStatus::kOk;
  std::string error;     // kError/kOutOfMemory: Redis's or the client's message
  std::int64_t now = 0;  // Redis's clock when the script ran (ms since the epoch); 0 if unknown
};
struct InsertResult : StoreResult {
  std::uint64_t id = 0;
};
// A reserve: the claimed job, or (kNotFound) when the next job of these tubes may come due.
struct ClaimResult : StoreResult {
  std::uint64_t id = 0;
  std::uint64_t token = 0;  // fencing token of this lease
  std::string body;
  std::int64_t lease_end = 0;  // Redis ms
  std::int64_t next_due = -1;  // Redis ms when one may be ready; -1 none (if next_known)
  // reserve: next_due is known for kNotFound, and for kOk from one tube left with no ready job
  bool next_known = false;
  std::uint64_t more = 0;      // kOk from reserve: ready jobs left in the job's tube
  std::string tube;            // kOk from reserve: the job's tube
  std::int64_t delay_due = 0;  // kOk from reserve: when the delay that made it ready was due
};
// delete, release, bury, kick-job, pause-tube; touch (value = new lease end); kick (value = count)
struct ChangeResult : StoreResult {
  std::int64_t value = 0;
};
struct PeekResult : StoreResult {
  std::uint64_t id = 0;
  std::string body;
};
struct StoreJobInfo : StoreResult {
  std::string tube;
  JobStats stats;  // stats.tube is empty: use `tube`
};
struct TubeInfo : StoreResult {
  TubeStats stats;               // counts and pause only (name and connection counts are local)
  std::uint64_t deliveries = 0;  // jobs ever reserved from it (the fleet's), for the web console
  // ms since its longest-waiting ready job became ready, and since the one a reserve takes next
  // did; -1: no ready job (or none with a ready time: made ready by an older version)
  std::int64_t oldest_ready_age = -1, head_ready_age = -1;
};
struct StoreTotals : StoreResult, StateCounts {};  // the whole fleet's job counts
struct TubeList : StoreResult {
  std::vector<std::string> names;  // in creation order (older data without it first, by name)
};
// The web console's list or search of a tube's jobs in one state (RedisStore::list_jobs).
struct JobListResult : StoreResult {
  struct Entry {
    std::uint64_t id = 0;
    std::uint32_t priority = 0;
    std::uint64_t body_size = 0;
    std::int64_t time_left = 0;  // delayed: ms until due
    std::string preview;         // the body's first bytes
  };
  std::uint64_t looked = 0;  // jobs whose body was looked at
  std::uint64_t total = 0;   // jobs in that state
  std::vector<Entry> jobs;
};
struct ScanResult : StoreResult {
  struct Tube {
    std::string name;
    bool ready = false;          // has a ready job, not paused
    std::int64_t next_due = -1;  // paused with ready jobs: Redis ms when the pause ends; else -1
  };
  std::vector<Tube> tubes;
  // Redis ms of the fleet's first timer left after the scan (a delayed job or a lease of any
  // tube); -1: none. Nothing can come due before it unless a change adds an earlier one.
  std::int64_t first_timer = -1;
};

// The zero-padded form of an id used as the job's member in every zset and its field in the
// records hash ("00000000000000000042"): equal scores then order by id.
inline std::string redis_job_member(std::uint64_t id) {
  char text[24];
  std::snprintf(text, sizeof text, "%020llu", static_cast<unsigned long long>(id));
  return text;
}

}  // namespace wheel::jobs
