// SPDX-License-Identifier: Apache-2.0
// Delivery through wheel::jobs's RedisStore inside the worker's own process, the way BullMQ's
// Worker runs inside its process: `concurrency` chains on one libuv loop, each reserving a job of
// `tube` from Redis, then deleting it (the no-op job) together with its next reserve, until
// `count` jobs were delivered (reserved and deleted) or `timeout` passed. No wheel-jobs node sits
// between the worker and Redis; the claims and deletes of the chains ride in the store's group
// commits as a node's do. A chain that finds no ready job tries again after `retry` (after a
// failed command, 50 ms), so this is for jobs that are due (a benchmark's deliver phase), not a
// waiting worker.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

namespace wheel::load {

struct RedisDeliverConfig {
  std::string url = "redis://127.0.0.1:6379";  // redis://HOST:PORT[/DB]
  std::string prefix = "wj:";                  // the store's key prefix (RedisStoreOptions)
  std::string tube = "default";
  std::uint64_t count = 0;                    // 1 .. 10^9 jobs to deliver
  std::uint32_t concurrency = 50;             // 1 .. 10,000 chains
  std::chrono::milliseconds timeout{60'000};  // > 0
  std::chrono::milliseconds retry{1};         // > 0: after a reserve found nothing
  // Called about once a second while the run lasts with a one-line progress text (e.g. logged):
  // the seconds since the first reserve, jobs delivered so far and in that second, failures;
  // while Redis is not connected, where it waits (the URL without its password). May be empty.
  std::function<void(const std::string&)> progress;
};

struct RedisDeliverResult {
  std::uint64_t delivered = 0;       // reserved, then deleted with the lease's token
  std::uint64_t empty_reserves = 0;  // reserves that found no ready job
  std::uint64_t lost_deletes = 0;    // deletes answered not found (the lease had passed on)
  std::uint64_t failures = 0;        // commands that failed (Redis down, timeouts)
  std::string first_failure;
  double secs = 0;        // from the first reserve to the last delete (or to the timeout)
  bool complete = false;  // delivered == count
};

// Throws std::invalid_argument for a bad URL or a setting out of range. Blocks until done.
RedisDeliverResult run_redis_deliver(const RedisDeliverConfig& config);

// A run's figures as one JSON object, the form compare-fleet's drivers print (peer, role,
// delivered, n, complete, secs, delivered_per_s, empty_reserves, cpu_secs, and errors listing
// only what happened: lost_deletes, failures; first_failure if any). `cpu_secs`: the process's
// CPU time.
nlohmann::json redis_deliver_json(const RedisDeliverConfig& config,
                                  const RedisDeliverResult& result, double cpu_secs);

}  // namespace wheel::load
