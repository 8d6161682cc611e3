// SPDX-License-Identifier: Apache-2.0
#include "cluster_shards.h"

#include <optional>
#include <utility>

#include "wheel/jobs/fleet/redis_shards.h"
#include "wheel/redis/redis_cluster_slot.h"

namespace wheel::jobs_app {

namespace {

ClusterShards failure(int status, std::string why) {
  ClusterShards out;
  out.exit_status = status;
  out.error = std::move(why);
  return out;
}

}  // namespace

ClusterShards settle_cluster_shards(uv_loop_t* loop, jobs::RedisCluster& cluster,
                                    const std::string& prefix, std::uint32_t given,
                                    std::chrono::milliseconds within) {
  uv_update_time(loop);
  const std::uint64_t deadline = uv_now(loop) + static_cast<std::uint64_t>(within.count());
  while (cluster.map().served_slots() < jobs::kRedisClusterSlots && uv_now(loop) < deadline) {
    uv_run(loop, UV_RUN_ONCE);
  }
  if (cluster.map().served_slots() < jobs::kRedisClusterSlots) {
    return failure(1, "the cluster's slot map did not cover every slot within " +
                          std::to_string(within.count()) + " ms (--store-connect-timeout)");
  }
  const std::uint32_t wanted =
      given != 0 ? given : jobs::redis_default_shards(cluster.map().primaries().size());
  // SET NX GET: the kept count, or nil when this node's was kept.
  std::optional<jobs::RedisValue> reply;
  cluster.command({"SET", prefix + "shards", std::to_string(wanted), "NX", "GET"},
                  [&](const jobs::RedisValue& v) { reply = v; });
  while (!reply && uv_now(loop) < deadline) uv_run(loop, UV_RUN_ONCE);
  if (!reply) return failure(1, "no answer about the shard count within the connect timeout");
  if (reply->is_error()) return failure(1, "cannot keep the shard count: " + reply->str);
  if (reply->type == jobs::RedisValue::Type::kNil) return {wanted, 0, {}};
  char* end = nullptr;
  const unsigned long kept = std::strtoul(reply->str.c_str(), &end, 10);
  if (end == reply->str.c_str() || *end != '\0' || kept < 1 || kept > jobs::kMaxRedisShards) {
    return failure(1, "the key " + prefix + "shards holds '" + reply->str +
                          "', not a shard count from 1 to " +
                          std::to_string(jobs::kMaxRedisShards));
  }
  if (given != 0 && given != kept) {
    return failure(2, "--store-shards: this fleet's jobs are kept in " + std::to_string(kept) +
                          " shards (key " + prefix + "shards), not " + std::to_string(given) +
                          "; ids name their shard, so the count cannot change under them");
  }
  return {static_cast<std::uint32_t>(kept), 0, {}};
}

}  // namespace wheel::jobs_app
