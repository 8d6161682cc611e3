// SPDX-License-Identifier: Apache-2.0
// Test support: one wheel-jobs node of a fleet (the binary at WHEEL_JOBS_PATH, which the test's
// CMake target defines) with `--store` on a test's RedisServer, on a port the kernel picks.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "support/child_process.h"
#include "support/redis_server.h"

namespace wheel_test {

// Starts `wheel-jobs --store <redis> --port 0 --log-level warn` and then `extra`; fails the test
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

}  // namespace wheel_test
