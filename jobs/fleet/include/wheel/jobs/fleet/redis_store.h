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
// Shards (redis_shards.h): on one Redis the store is one shard; on a Redis Cluster it is S,
// each a whole store under its own hash tag, and every tube spreads over all of them: puts go
// round-robin, a command on one id goes to the id's shard (id % S) in one hop, reserve looks at
// the shards in turn from a start that rotates (redis_store_shards.cc), reads sum or merge.
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

#include "wheel/jobs/fleet/redis_link.h"
#include "wheel/jobs/fleet/redis_script_limits.h"
#include "wheel/jobs/fleet/redis_store_results.h"
#include "wheel/redis/redis_client.h"

namespace wheel::jobs {

class RedisBatches;

enum class PeekWhich : std::uint8_t { kReady, kDelayed, kBuried };

struct RedisStoreOptions {
  // Prefix of every key and of the channel; two fleets on one Redis database use two prefixes.
  std::string prefix = "wj:";
  // Shards (redis_shards.h): 1 on one Redis (keys exactly as before shards existed); on a cluster
  // 1 to kMaxRedisShards, the same for every process and the whole life of the fleet's data.
  std::uint32_t shards = 1;
};

struct RedisStoreScripts;

class RedisStore {
 public:
  template <class R>
  using Done = std::function<void(R&&)>;

  // Registers its scripts with `link` (loaded on every connect). The link's client or cluster
  // must outlive the store. Throws std::invalid_argument for shards out of range.
  RedisStore(RedisLink link, RedisStoreOptions options = {});
  RedisStore(const RedisStore&) = delete;
  RedisStore& operator=(const RedisStore&) = delete;

  const std::string& prefix() const { return options_.prefix; }
  // The channel of shard 0 (with one shard, the store's), and of every shard.
  std::string event_channel() const { return shards_.front().prefix + "ev"; }
  std::vector<std::string> event_channels() const;
  RedisLink& link() { return link_; }
  std::uint32_t shards() const { return static_cast<std::uint32_t>(shards_.size()); }
  // The shard `id` lives on (id % shards()), and each shard's key prefix.
  std::uint32_t shard_of(std::uint64_t id) const;
  const std::string& shard_prefix(std::uint32_t shard) const { return shards_[shard].prefix; }

  // put: ready now (delay 0) or delayed; `ttr` as given (the caller raises 0 to a second).
  void put(std::string_view tube, std::uint32_t priority, Millis delay, Millis ttr,
           std::string_view body, Done<InsertResult> done);
  // reserve: the ready job of lowest (priority, id) over `tubes` that are not paused. With S
  // shards: of the first shard, from a start that moves on by one at every reserve, that has one
  // (so a job waits at most S - 1 reserves that found work behind less urgent jobs of other
  // shards, and no shard starves).
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
  using Scripts = RedisStoreScripts;  // internal (src/redis_store_internal.h)
  struct Shard {
    std::string prefix;
    std::vector<std::string> keys;  // KEYS of its scripts: {prefix + "j"}, for routing
    std::shared_ptr<RedisBatches> batches;
  };
  const Shard& shard(std::uint64_t id) const { return shards_[shard_of(id)]; }
  // One shard's part of the commands on a tube or on the whole store (redis_store.cc); the
  // public ones run it on the single shard, or on each and merge (redis_store_shards.cc).
  // reserve on shard `s`, then on the next while none had a job, `left` shards in all
  void reserve_from(std::shared_ptr<const std::vector<std::string>> tubes, std::size_t s,
                    std::size_t left, ClaimResult so_far, Done<ClaimResult> done);
  void kick_on(std::size_t s, std::string_view tube, std::uint64_t bound, Done<ChangeResult> done);
  void peek_tube_on(std::size_t s, std::string_view tube, PeekWhich which, Done<PeekResult> done);
  void tube_stats_on(std::size_t s, std::string_view tube, bool known, Done<TubeInfo> done);
  void totals_on(std::size_t s, Done<StoreTotals> done);
  void list_tubes_on(std::size_t s, Done<TubeList> done);
  void pause_tube_on(std::size_t s, std::string_view tube, Millis delay, bool known,
                     Done<ChangeResult> done);
  void scan_on(std::size_t s, std::size_t limit, const std::vector<std::string>& tubes,
               Done<ScanResult> done);
  void list_jobs_on(std::size_t s, std::string_view tube, PeekWhich which, std::size_t offset,
                    std::size_t scan, std::size_t preview, std::string_view needle,
                    std::size_t limit, Done<JobListResult> done);
  void move_on(std::size_t s, std::string_view from, std::string_view to, PeekWhich which,
               std::size_t count, Done<ChangeResult> done);
  void give_back_on(std::size_t s,
                    const std::vector<std::pair<std::uint64_t, std::uint64_t>>& leases,
                    Done<ChangeResult> done);

  RedisLink link_;
  RedisStoreOptions options_;
  std::shared_ptr<Scripts> scripts_;
  std::vector<Shard> shards_;
  std::size_t next_put_ = 0;                               // the shard of the next put
  std::size_t next_reserve_ = 0;                           // where the next reserve starts looking
  std::shared_ptr<char> life_ = std::make_shared<char>();  // chains over shards check it
};

}  // namespace wheel::jobs
