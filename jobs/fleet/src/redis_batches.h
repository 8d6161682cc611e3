// SPDX-License-Identifier: Apache-2.0
// Internal to wheel::jobs. Group commit toward Redis for the store's hot commands (put, delete,
// reserve of one tube): the requests of a kind issued in one turn of the loop, from any
// connection, go as ONE script at the turn's end (RedisClient::want_turn_end); those that arrive
// while it is in flight wait and go as one script when it returns (at most kMaxBatchPerScript
// requests, kMaxBatchBytes of bodies). Sending the first request of a turn alone at once cost a
// script of one per round trip: a worker's 50 reserves went as 1 + 49.
// So a busy node sends one put, one delete and one claim per tube per round trip, each costing
// Redis a fixed number of commands (one TIME, one HSET, one ZADD per zset...) for the whole batch,
// while a quiet one adds no delay. Claims are never sent before the deletes queued ahead of them.
// Each request still gets its own result, only after Redis answered the script that carried it.
//
// Ownership: shared by the store and the callbacks in flight (a reply after the store is gone
// finds its batch state alive). Threads: loop thread only (the client's).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "wheel/jobs/fleet/redis_link.h"
#include "wheel/jobs/fleet/redis_store_results.h"
#include "wheel/redis/redis_client.h"

namespace wheel::jobs {

class RedisBatches : public std::enable_shared_from_this<RedisBatches> {
 public:
  template <class R>
  using Done = std::function<void(R&&)>;

  // Registers its scripts with `link` (loaded on every connect). The link's client or cluster
  // must outlive it. `prefix`: the shard's; its puts' ids are n * stride + offset
  // (redis_shards.h; 1 and 0 with one shard).
  RedisBatches(RedisLink link, std::string prefix, std::uint32_t stride = 1,
               std::uint32_t offset = 0);

  void put(std::string_view tube, std::uint32_t priority, Millis delay, Millis ttr,
           std::string_view body, Done<InsertResult> done);
  void remove(std::uint64_t id, std::uint64_t token, Done<ChangeResult> done);
  // One tube: batched with the other claims of that tube. Several: a script of its own.
  void reserve(const std::vector<std::string>& tubes, Done<ClaimResult> done);
  // Sends what queued: each lane with room gets its batch. Runs at the end of the loop turn
  // (RedisClient::add_turn_end), so that the requests of one turn go as one script.
  void send_queued();

 private:
  struct Put {
    std::string tube, priority, delay, ttr, body;
    Done<InsertResult> done;
  };
  struct Remove {
    std::string member, token;
    Done<ChangeResult> done;
  };
  template <class Item>
  struct Lane {
    std::deque<Item> queued;
    std::size_t in_flight = 0;  // scripts sent, not answered
  };

  void schedule();  // send_queued() at the turn's end (now if the client is down)
  void send_puts();
  void send_removes();  // a batch, unless one is in flight
  // A claim never overtakes a delete queued before it: every queued delete is sent first, even
  // beside a batch in flight, and Redis runs one connection's scripts in order. (A worker's
  // reserve runs beside its deletes, RedisJobsHandler::overlaps; a lease that ran out must be
  // deleted, not claimed again.)
  void send_removes_before_claim();
  void send_remove_batch();
  void send_claims(const std::string& tube);

  RedisLink link_;
  std::string prefix_;
  std::vector<std::string> keys_;  // KEYS of every script: a key of the shard, for routing
  std::uint32_t stride_, offset_;
  RedisScript put_script_;
  RedisScript remove_script_;
  RedisScript reserve_script_;
  Lane<Put> puts_;
  Lane<Remove> removes_;
  std::map<std::string, Lane<Done<ClaimResult>>, std::less<>> claims_;  // by tube
};

}  // namespace wheel::jobs
