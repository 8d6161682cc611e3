// SPDX-License-Identifier: Apache-2.0
// The shard layout of a store: S shards, each a whole store of its own (every tube, its job
// records, its counters, its due index) under its own key prefix. With one shard (redis://,
// redis-sentinel://) the prefix is the store's own, so the single-Redis layout is unchanged.
// With S > 1 (redis-cluster://) shard s's prefix is "<prefix>{s.k}:": every key of the shard
// carries that hash tag, so it lives in one slot and each script runs on one primary. k is the
// first number that puts the tag's slot in the s-th of S equal slices of the 16384 slots, so the
// shards spread over the primaries as evenly as the slots do (S a multiple of the primaries and
// the slots split evenly, as redis-cli --cluster create does: exactly S / primaries each). The
// tags depend on S alone: every process of a fleet computes the same ones.
//
// Ids name their shard: shard s hands out s, s + S, s + 2S... (its counter n gives n * S + s),
// so id % S is the shard, and one shard's ids are plain integers as beanstalkd's are. S must
// therefore stay the same for the life of a fleet's data (RedisStore::check_shards).
//
// Threads: pure functions, safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace wheel::jobs {

// --store-shards' bounds.
inline constexpr std::uint32_t kMaxRedisShards = 256;
// S when not given: twice the primaries (each primary serves two shards, so one tube's puts and
// reserves alternate over all of them), at least 2, at most kMaxRedisShards.
std::uint32_t redis_default_shards(std::size_t primaries);
// Each shard's key prefix, shard 0 first (see above). REQUIRES 1 <= shards <= kMaxRedisShards.
std::vector<std::string> redis_shard_prefixes(const std::string& prefix, std::uint32_t shards);
inline std::uint32_t redis_shard_of(std::uint64_t id, std::uint32_t shards) {
  return static_cast<std::uint32_t>(id % shards);
}

}  // namespace wheel::jobs
