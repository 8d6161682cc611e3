// SPDX-License-Identifier: Apache-2.0
// Test support: one `wheel-jobs --store` node (the binary at WHEEL_JOBS_PATH, which the test's
// CMake target defines) on a port the kernel picks, serving from a test's redis-server.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "child_process.h"
#include "redis_server.h"

namespace wheel_test {

// Starts a node on `redis` with `--port 0 --log-level warn` and then `extra`; fails the test
// when it does not come to listen.
inline std::unique_ptr<ServerProcess> start_node(const RedisServer& redis,
                                                 const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args{WHEEL_JOBS_PATH, "--store", redis.url(), "--port", "0",
                                "--log-level",   "warn"};
  args.insert(args.end(), extra.begin(), extra.end());
  auto node = std::make_unique<ServerProcess>(args);
  EXPECT_GT(node->port(), 0) << "wheel-jobs --store did not start";
  return node;
}

// A redis-server of its own and two nodes serving from it.
struct TwoNodes {
  RedisServer redis;
  std::unique_ptr<ServerProcess> a = start_node(redis);
  std::unique_ptr<ServerProcess> b = start_node(redis);
};

// The calls Redis counted for `command` (INFO commandstats: "evalsha", "eval", ...).
inline long long redis_calls(int port, const std::string& command) {
  const std::string stats = redis_command(port, {"INFO", "commandstats"});
  const std::string name = "cmdstat_" + command + ":calls=";
  const std::size_t at = stats.find(name);
  return at == std::string::npos ? 0 : std::atoll(stats.c_str() + at + name.size());
}

}  // namespace wheel_test
