// SPDX-License-Identifier: Apache-2.0
// wheel-jobs --store redis://: the safety scan. An idle fleet costs Redis almost nothing (the
// scan sleeps until the fleet's first timer, at most --max-scan-interval), and still no job
// depends only on a node's memory: a job whose wake-up event was lost (planted in Redis without
// one) reaches a waiting reserve within --max-scan-interval, or, once a scan has seen its due
// time, when it comes due.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fleet_test_lua.h"
#include "support/beanstalk_session.h"
#include "support/redis_server.h"
#include "support/wheel_jobs_node.h"

namespace {

using namespace std::chrono_literals;
using wheel_test::BeanstalkSession;
using wheel_test::Clock;
using wheel_test::RedisServer;
using wheel_test::start_node;

// A job written straight into Redis in the store's layout (prefix wj:), ready (delay_ms 0) or
// due `delay_ms` after Redis's now, with no event published: what a node sees when the put's
// event was lost.
std::string plant_without_event(const RedisServer& redis, const std::string& tube, int delay_ms) {
  return wheel_test::redis_command(
      redis.port(), {"EVAL", std::string(wheel_test::lua::kPlantWithoutEvent), "0", tube,
                     std::to_string(delay_ms)});
}

TEST(WheelJobsFleetScanTest, AnIdleFleetIssuesAlmostNoCommands) {
  wheel_test::TwoNodes fleet;
  const RedisServer& redis = fleet.redis;
  const int a = fleet.a->port(), b = fleet.b->port();
  {
    BeanstalkSession p(a);
    for (int i = 0; i < 1000; ++i)
      ASSERT_EQ(p.put(0, "3600", "60", "far").substr(0, 9), "INSERTED ");
  }
  std::vector<std::unique_ptr<BeanstalkSession>> waiters;
  for (int i = 0; i < 4; ++i) {
    waiters.push_back(std::make_unique<BeanstalkSession>(i % 2 ? a : b));
    waiters.back()->send_all("reserve\r\n");
  }
  auto total = [&] {
    return wheel_test::redis_info_field(redis.port(), "stats", "total_commands_processed");
  };
  // The waiters' first claims and what the puts set off come first: wait (bounded) for a quiet
  // second, not a fixed 500 ms that nodes slowed by a loaded machine can overrun. A node that
  // kept sending would never give one, and fails below all the same.
  long long before = total();
  for (const auto end = Clock::now() + 30s; Clock::now() < end;) {
    std::this_thread::sleep_for(1s);
    const long long now = total();
    const bool quiet = now - before - 1 <= 1;  // less this INFO
    before = now;
    if (quiet) break;
  }
  std::this_thread::sleep_for(5s);
  // The measurement's own INFO is not the fleet's.
  const double per_second = static_cast<double>(total() - before - 1) / 5.0;
  std::printf(
      "idle fleet: 2 nodes, 1000 jobs due in an hour, 4 waiting reserves: %.2f Redis "
      "commands/s counting those the scripts run\n",
      per_second);
  // The scans' next run is a minute away (the default --max-scan-interval): nothing to send.
  // A scan every second per node would be ~8 a second.
  EXPECT_LE(per_second, 1.0);
}

TEST(WheelJobsFleetScanTest, AJobWhoseEventWasLostIsFoundWithinTheMaxScanInterval) {
  RedisServer redis;
  auto a = start_node(redis, {"--max-scan-interval", "2s"});
  BeanstalkSession w(a->port());
  ASSERT_TRUE(w.send_all("reserve-with-timeout 30\r\n"));
  std::this_thread::sleep_for(300ms);  // it waits, with nothing pending anywhere
  ASSERT_EQ(plant_without_event(redis, "default", 0), "1");  // ready, nobody told
  const auto start = Clock::now();
  std::string body;
  EXPECT_EQ(w.read_reply(&body), "RESERVED 1 4");  // found by a scan, not a 30 s time-out
  EXPECT_EQ(body, "lost");
  std::printf("a job whose event was lost, --max-scan-interval 2s: reserved %lld ms after\n",
              static_cast<long long>((Clock::now() - start) / 1ms));
  EXPECT_LT(Clock::now() - start, 20s);
}

TEST(WheelJobsFleetScanTest, AfterTheSubscriptionReconnectsAScanFindsWhatItMissedWhenDue) {
  RedisServer redis;
  auto a = start_node(redis, {"--max-scan-interval", "1h"});
  BeanstalkSession w(a->port());
  ASSERT_TRUE(w.send_all("reserve-with-timeout 30\r\n"));
  std::this_thread::sleep_for(300ms);
  // Lost while the subscription was down: the node scans after it reconnects, sees the job's
  // due time as the fleet's first timer and scans again then, though its longest gap is 1 h.
  ASSERT_EQ(plant_without_event(redis, "default", 3000), "1");
  ASSERT_NE(wheel_test::redis_command(redis.port(), {"CLIENT", "KILL", "TYPE", "pubsub"}), "0");
  std::string body;
  EXPECT_EQ(w.read_reply(&body), "RESERVED 1 4");
  EXPECT_EQ(body, "lost");
}

}  // namespace
