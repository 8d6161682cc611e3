// SPDX-License-Identifier: Apache-2.0
// RedisStore: beanstalkd's job model kept whole in Redis, so that any number of processes serve
// the same tubes. Every command is one Lua script, atomic on the Redis side; a reply means Redis
// applied the change (and, with appendfsync always, logged it), so an acknowledgement is exactly
// as durable as Redis is. Nothing about a job lives only in a process's memory.
//
// Time is Redis's (TIME inside the scripts), one clock for the whole fleet; each reply carries
// Redis's `now` in milliseconds, so a process can map Redis times onto its own clock.
//
// Exactly one holder. reserve claims a ready job and gives it a lease of its TTR and a fencing
// token (the job's reserve count: every claim of the job has a greater one). release, bury and
// touch need the token of the current lease and delete of a reserved job needs it too; another
// token (a lease that ran out and was claimed again) gets kNotFound. A lease that ran out makes the
// job ready again inside the next script that looks at it (every script first promotes what is due:
// delays that ended, leases that ran out), so correctness never waits on a process's timer.
//
// Wake-ups: every change that gives a tube work (a put, a release, a promotion, a kick, a pause
// change) publishes "<due ms> <tube>" on event_channel(); subscribers use it to wake their waiting
// reserves at the right millisecond. Messages can be lost (pub/sub), so scan() is the safety net.
//
// Batches: put, delete and a reserve of one tube ride in group commits (redis_batches.h): the
// requests of a kind issued in one loop turn go as one script at the turn's end; while one is in
// flight, further requests wait and go as one script when it returns; each still gets its own
// result after Redis answered.
//
// Threads: loop thread only (the client's). Callbacks run on it, after the reply arrived.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "wheel/jobs/fleet/redis_script_limits.h"
#include "wheel/jobs/fleet/redis_store_results.h"
#include "wheel/redis/redis_client.h"

namespace wheel::jobs {

class RedisBatches;

enum class PeekWhich : std::uint8_t { kReady, kDelayed, kBuried };

struct RedisStoreOptions {
  // Prefix of every key and of the channel; two fleets on one Redis database use two prefixes.
  std::string prefix = "wj:";
};

class RedisStore {
 public:
  template <class R>
  using Done = std::function<void(R&&)>;

  // Registers its scripts with `client` (loaded on every connect). `client` must outlive it.
  RedisStore(RedisClient& client, RedisStoreOptions options = {});
  RedisStore(const RedisStore&) = delete;
  RedisStore& operator=(const RedisStore&) = delete;

  const std::string& prefix() const { return options_.prefix; }
  std::string event_channel() const { return options_.prefix + "ev"; }
  RedisClient& client() { return client_; }

  // put: ready now (delay 0) or delayed; `ttr` as given (the caller raises 0 to a second).
  void put(std::string_view tube, std::uint32_t priority, Millis delay, Millis ttr,
           std::string_view body, Done<InsertResult> done);
  // reserve: the ready job of lowest (priority, id) over `tubes` that are not paused.
  void reserve(const std::vector<std::string>& tubes, Done<ClaimResult> done);
  // reserve-job: job `id` if ready, delayed or buried.
  void reserve_job(std::uint64_t id, Done<ClaimResult> done);
  // delete: a ready, delayed or buried job, or a reserved one whose lease has `token` (0: none).
  void remove(std::uint64_t id, std::uint64_t token, Done<ChangeResult> done);
  // release: the lease `token` ends; ready (delay 0) or delayed; priority nullopt keeps the job's.
  // `counted`: a client's release (counts in stats-job), not a disconnect.
  void release(std::uint64_t id, std::uint64_t token, std::optional<std::uint32_t> priority,
               Millis delay, bool counted, Done<ChangeResult> done);
  void bury(std::uint64_t id, std::uint64_t token, std::uint32_t priority, Done<ChangeResult> done);
  // touch: the lease restarts at its full TTR; value = the new lease end (Redis ms).
  void touch(std::uint64_t id, std::uint64_t token, Done<ChangeResult> done);
  // kick: up to `bound` buried jobs of `tube` if it has any, else up to `bound` delayed ones,
  // in scripts of at most kMaxKickPerScript jobs (others' commands run between them); `done`
  // runs once: value = jobs kicked. A failed script ends the kick: the jobs kicked before it
  // are reported (they stay kicked), or the error when there were none.
  void kick(std::string_view tube, std::uint64_t bound, Done<ChangeResult> done);
  void kick_job(std::uint64_t id, Done<ChangeResult> done);
  void peek(std::uint64_t id, Done<PeekResult> done);
  void peek_tube(std::string_view tube, PeekWhich which, Done<PeekResult> done);
  void job_stats(std::uint64_t id, Done<StoreJobInfo> done);
  // `known`: the caller uses or watches the tube, so it exists even without jobs.
  void tube_stats(std::string_view tube, bool known, Done<TubeInfo> done);
  void totals(Done<StoreTotals> done);
  void list_tubes(Done<TubeList> done);
  void pause_tube(std::string_view tube, Millis delay, bool known, Done<ChangeResult> done);
  // Promotes what is due (at most `limit`) and reports, for each of `tubes`, whether it has a
  // ready job (or when its pause ends), and the fleet's first timer. Costs Redis the script and
  // 3 calls (TIME, the first timer, one count per tube) when nothing is due.
  void scan(std::size_t limit, const std::vector<std::string>& tubes, Done<ScanResult> done);
  // The web console's list and search: of `scan` jobs of `tube` in state `which` after the first
  // `offset` (in the order a reserve, the clock or a kick takes them), those whose body holds
  // `needle` (all when empty), at most `limit`, each with `preview` bytes of its body. A read:
  // one script, O(log N + scan) in Redis (a range of a zset by rank).
  void list_jobs(std::string_view tube, PeekWhich which, std::size_t offset, std::size_t scan,
                 std::size_t preview, std::string_view needle, std::size_t limit,
                 Done<JobListResult> done);
  // The web console's move (jobs/fleet/lua/move.lua): up to `count` jobs of `from` in state
  // `which`, the first in its order, put anew into `to` and deleted from `from`, in one script
  // (all or nothing). value = jobs moved.
  void move(std::string_view from, std::string_view to, PeekWhich which, std::size_t count,
            Done<ChangeResult> done);
  // A leaving node's leases, (id, fencing token) each, back to ready at once, in scripts of
  // at most kMaxGiveBackPerScript leases; a lease that ran out or passed to another holder is
  // left alone. `done` runs once, after the last script: value = jobs given back; an error if
  // any script failed (those leases then run out as after a crash).
  void give_back(const std::vector<std::pair<std::uint64_t, std::uint64_t>>& leases,
                 Done<ChangeResult> done);

  // The zero-padded form of an id used in keys ("00000000000000000042").
  static std::string member(std::uint64_t id) { return redis_job_member(id); }

 private:
  struct Scripts;
  RedisClient& client_;
  RedisStoreOptions options_;
  std::shared_ptr<Scripts> scripts_;
  std::shared_ptr<RedisBatches> batches_;
};

}  // namespace wheel::jobs
