// SPDX-License-Identifier: Apache-2.0
// wheel-jobs on a Redis Cluster (--store redis-cluster://): before listening, the slot map and
// the fleet's shard count (wheel/jobs/fleet/redis_shards.h). The count is kept in the cluster
// (key "<prefix>shards"): the first node of a fleet writes it, every later one reads it, since
// ids name their shard by it and it must never change under the fleet's data.
#pragma once

#include <uv.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "wheel/redis/redis_cluster.h"

namespace wheel::jobs_app {

struct ClusterShards {
  std::uint32_t shards = 0;  // 0: failed
  int exit_status = 0;       // with 0 shards: 1 (the cluster did not answer) or 2 (--store-shards)
  std::string error;         // with 0 shards: one line
};

// Runs `loop` until `cluster` (started) has a map serving every slot, then settles the count:
// the one kept in the cluster if any (`given` must be 0 or equal it), else `given`, else
// redis_default_shards(primaries), which it keeps there. All within `within`.
ClusterShards settle_cluster_shards(uv_loop_t* loop, jobs::RedisCluster& cluster,
                                    const std::string& prefix, std::uint32_t given,
                                    std::chrono::milliseconds within);

}  // namespace wheel::jobs_app
