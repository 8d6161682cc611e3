// SPDX-License-Identifier: Apache-2.0
// The first contact with a store: before a wheel-jobs node says `listening on`, it waits (a
// bounded time) until its Redis answers, so a store that was never reached (a typo in --store,
// a wrong password) is a clear refusal at start-up rather than a server that looks ready and
// answers INTERNAL_ERROR to everything. A Redis Cluster node reached through redis:// is refused
// the same way: it answers MOVED for most keys, and CROSSSLOT for the store's scripts.
// Loop thread only.
#pragma once

#include <uv.h>

#include <chrono>
#include <functional>
#include <string>

#include "wheel/redis/redis_client.h"

namespace wheel::jobs {

// Runs `loop` until `client` (started) answers a PING without an error, at most `bound`: a PING
// now and again each 100 ms after a failed one (the client itself reconnects with its backoff).
// Returns "" once one answered, else the last error ("ERR redis unavailable: cannot connect:
// Connection refused", "WRONGPASS ..."). Call it before anything else uses the loop: whatever
// the loop holds runs meanwhile.
std::string wait_for_first_reply(uv_loop_t* loop, RedisClient& client,
                                 std::chrono::milliseconds bound);

// What the first-contact checks say of a Redis Cluster node reached through redis://.
inline constexpr const char* kClusterNodeRefusal =
    "this is a Redis Cluster node: use redis-cluster://";

// Asks `client` (started) INFO cluster until it answers (again each 100 ms after a failure, as
// long as the client runs), then calls `done` once: with kClusterNodeRefusal when the server
// says cluster_enabled:1, else with "" (a standalone server, or one whose ACL refuses INFO:
// nothing to tell). `done` is not called if the client stops first.
void check_not_a_cluster_node(uv_loop_t* loop, RedisClient& client,
                              std::function<void(const std::string& refusal)> done);

}  // namespace wheel::jobs
