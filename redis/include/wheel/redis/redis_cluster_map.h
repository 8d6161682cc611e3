// SPDX-License-Identifier: Apache-2.0
// RedisClusterMap: which primary serves each of Redis Cluster's 16384 slots, read from a
// `CLUSTER SHARDS` reply (Redis 7.0: per shard its slot ranges and its nodes with their role
// and health; the shard's online primary is taken). A value: the cluster client keeps one and
// replaces it on every refresh, and patches one slot when a node answers MOVED. A shard without
// an online primary (a failover under way) leaves its slots unserved.
//
// Threads: a value; no synchronisation of its own.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "wheel/redis/redis_client.h"
#include "wheel/redis/redis_cluster_slot.h"
#include "wheel/redis/redis_endpoint.h"

namespace wheel::jobs {

class RedisClusterMap {
 public:
  RedisClusterMap();  // no slot served

  // The map a `CLUSTER SHARDS` reply describes, or nullopt with `error` set (an error reply,
  // not an array of shards, a shard without slot ranges, a range out of bounds).
  static std::optional<RedisClusterMap> from_shards(const RedisValue& reply, std::string* error);

  // The primary serving `slot`, or nullptr (no shard serves it). REQUIRES slot < 16384.
  const RedisAddress* primary_of(std::uint16_t slot) const;
  // Every primary the map names, each once (after assign(), one may serve no slot any more).
  const std::vector<RedisAddress>& primaries() const { return primaries_; }
  // Slots some primary serves (16384 in a healthy cluster).
  std::size_t served_slots() const;

  // Points `slot` at `primary` (a MOVED reply's news, until the next refresh).
  void assign(std::uint16_t slot, const RedisAddress& primary);

 private:
  static constexpr std::uint16_t kNone = 0xFFFF;
  std::uint16_t index_of(const RedisAddress& primary);  // adds it when new
  std::vector<std::uint16_t> owner_;                    // slot -> index into primaries_, or kNone
  std::vector<RedisAddress> primaries_;
};

}  // namespace wheel::jobs
