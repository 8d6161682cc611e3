// SPDX-License-Identifier: Apache-2.0
#include "wheel/jobs/fleet/redis_shards.h"

#include <algorithm>
#include <stdexcept>

#include "wheel/redis/redis_cluster_slot.h"

namespace wheel::jobs {

std::uint32_t redis_default_shards(std::size_t primaries) {
  const std::size_t s = std::clamp<std::size_t>(2 * primaries, 2, kMaxRedisShards);
  return static_cast<std::uint32_t>(s);
}

std::vector<std::string> redis_shard_prefixes(const std::string& prefix, std::uint32_t shards) {
  if (shards < 1 || shards > kMaxRedisShards) {
    throw std::invalid_argument("redis_shard_prefixes: shards out of range");
  }
  if (shards == 1) return {prefix};
  std::vector<std::string> out;
  for (std::uint32_t s = 0; s < shards; ++s) {
    const std::uint32_t low = s * kRedisClusterSlots / shards;
    const std::uint32_t high = (s + 1) * kRedisClusterSlots / shards;
    // A slice is at least 64 slots wide: a tag lands in it after about S tries.
    for (std::uint32_t k = 0;; ++k) {
      const std::string tag = std::to_string(s) + "." + std::to_string(k);
      const std::uint32_t slot = redis_key_slot(tag);
      if (slot >= low && slot < high) {
        out.push_back(prefix + "{" + tag + "}:");
        break;
      }
    }
  }
  return out;
}

}  // namespace wheel::jobs
