// SPDX-License-Identifier: Apache-2.0
// Test support: the fixture of the tests that run the wheel-jobs program itself (the binary at
// WHEEL_JOBS_PATH, which the test's CMake target defines) on a port the kernel picks, and talk
// to it with beanstalk clients.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "beanstalk_client.h"
#include "child_process.h"

namespace wheel_test {

// The fixture on any gtest base (::testing::Test, or TestWithParam<P> for a suite run once per
// backend: jobs_protocol_test).
template <class Base = ::testing::Test>
class WheelJobsProcessFixture : public Base {
 protected:
  // Starts wheel-jobs with `--port 0 --log-level warn` and then `extra`; fails the test when it
  // does not come to listen.
  void start(std::vector<std::string> extra = {}) {
    std::vector<std::string> args{WHEEL_JOBS_PATH, "--port", "0", "--log-level", "warn"};
    args.insert(args.end(), extra.begin(), extra.end());
    server = std::make_unique<ServerProcess>(args);
    ASSERT_GT(server->port(), 0) << "wheel-jobs did not start";
  }

  // A new client connected to the server start() ran; a failed connection fails the test.
  std::unique_ptr<Client> client() {
    auto c = std::make_unique<Client>(server->port());
    EXPECT_TRUE(c->connected());
    return c;
  }

  std::unique_ptr<ServerProcess> server;
};

using WheelJobsProcessTest = WheelJobsProcessFixture<>;

}  // namespace wheel_test
