// SPDX-License-Identifier: Apache-2.0
// wheel-jobs --store redis:// --metrics-port: the families a node with its jobs in memory serves,
// where they make sense for a fleet (jobs per state from Redis, this node's commands and changes,
// delivery lateness on Redis's clock), and the Redis client's own (round trips, failures,
// reconnects, connection state), scraped while Redis is up, down and back.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "support/beanstalk_session.h"
#include "support/free_port.h"
#include "support/metrics_scrape.h"
#include "support/redis_server.h"
#include "support/wait_until.h"
#include "support/wheel_jobs_node.h"

namespace {

using namespace std::chrono_literals;
using wheel::testing::Exposition;
using wheel_test::BeanstalkSession;
using wheel_test::Clock;
using wheel_test::scrape;
using wheel_test::series_of;

class WheelJobsFleetMetricsTest : public ::testing::Test {
 protected:
  // A node with its metrics on a free port; `port` receives that port.
  std::unique_ptr<wheel_test::ServerProcess> node(std::uint16_t* port) {
    *port = static_cast<std::uint16_t>(wheel_test::free_port());
    return wheel_test::start_node(redis_, {"--metrics-port", std::to_string(*port)});
  }
  static double changes(const Exposition& e, const char* kind) {
    return e.value("wheel_jobs_changes_total", {{"kind", kind}});
  }
  wheel_test::RedisServer redis_;
};

TEST_F(WheelJobsFleetMetricsTest, JobCountsAreTheFleetsChangesAndLatenessThisNodes) {
  std::uint16_t ma = 0, mb = 0;
  auto a = node(&ma);
  auto b = node(&mb);
  BeanstalkSession producer(a->port()), worker(b->port());
  ASSERT_EQ(producer.put(0, "0", "60", "one"), "INSERTED 1");
  ASSERT_EQ(producer.put(0, "0", "60", "two"), "INSERTED 2");
  std::string body;
  ASSERT_EQ(worker.call("reserve", nullptr, &body), "RESERVED 1 3");
  ASSERT_EQ(worker.call("delete 1"), "DELETED");
  ASSERT_EQ(worker.call("reserve", nullptr, &body), "RESERVED 2 3");
  ASSERT_EQ(worker.call("release 2 0 0"), "RELEASED");
  ASSERT_EQ(worker.call("reserve", nullptr, &body), "RESERVED 2 3");
  ASSERT_EQ(worker.call("bury 2 0"), "BURIED");
  // A delayed job put on A goes to the reserve waiting on B: one delivery lateness, on B.
  ASSERT_TRUE(worker.send_all("reserve\r\n"));
  ASSERT_EQ(producer.put(0, "0.100", "60", "three"), "INSERTED 3");
  ASSERT_EQ(worker.read_reply(&body), "RESERVED 3 5");
  ASSERT_EQ(worker.call("touch 3"), "TOUCHED");
  ASSERT_EQ(producer.call("kick 1"), "KICKED 1");

  const Exposition ea = scrape(ma).e;
  const Exposition eb = scrape(mb).e;
  // Jobs per state, puts, tubes: the fleet's, the same on every node.
  for (const Exposition* e : {&ea, &eb}) {
    EXPECT_EQ(e->value("wheel_jobs_redis_counts_read"), 1);
    EXPECT_EQ(e->value("wheel_jobs_jobs", {{"state", "ready"}}), 1) << "job 2, kicked";
    EXPECT_EQ(e->value("wheel_jobs_jobs", {{"state", "reserved"}}), 1) << "job 3";
    EXPECT_EQ(e->value("wheel_jobs_jobs", {{"state", "delayed"}}), 0);
    EXPECT_EQ(e->value("wheel_jobs_jobs", {{"state", "buried"}}), 0);
    EXPECT_EQ(e->value("wheel_jobs_puts_total"), 3);
    EXPECT_EQ(e->value("wheel_jobs_job_timeouts_total"), 0);
    EXPECT_EQ(e->value("wheel_jobs_tubes"), 1);
    EXPECT_EQ(e->value("wheel_jobs_redis_connected", {{"connection", "commands"}}), 1);
    EXPECT_EQ(e->value("wheel_jobs_redis_connected", {{"connection", "events"}}), 1);
    EXPECT_EQ(e->value("wheel_jobs_redis_reconnects_total", {{"connection", "commands"}}), 0);
    EXPECT_EQ(e->value("wheel_jobs_redis_failures_total", {{"kind", "unavailable"}}), 0);
    EXPECT_GE(e->value("wheel_jobs_redis_round_trip_seconds_count"), 3);
    EXPECT_EQ(e->families.at("wheel_jobs_redis_round_trip_seconds").type, "histogram");
  }
  // Changes and commands: each node's own.
  EXPECT_EQ(changes(ea, "put"), 3);
  EXPECT_EQ(changes(ea, "kick"), 1);
  EXPECT_EQ(changes(ea, "reserve"), 0);
  EXPECT_EQ(ea.value("wheel_jobs_commands_total", {{"command", "put"}}), 3);
  EXPECT_EQ(changes(eb, "put"), 0);
  EXPECT_EQ(changes(eb, "reserve"), 4);
  EXPECT_EQ(changes(eb, "delete"), 1);
  EXPECT_EQ(changes(eb, "release"), 1);
  EXPECT_EQ(changes(eb, "bury"), 1);
  EXPECT_EQ(changes(eb, "touch"), 1);
  EXPECT_EQ(eb.value("wheel_jobs_commands_total", {{"command", "reserve"}}), 4);
  EXPECT_EQ(series_of(eb, "wheel_jobs_changes_total"), 8u)
      << "no delay_ended or timeout series: those happen in Redis, on no node";
  EXPECT_EQ(eb.value("wheel_jobs_delivery_lateness_seconds_count"), 1);
  EXPECT_LT(eb.value("wheel_jobs_delivery_lateness_seconds_sum"), 5.0) << "bounded, not exact";
  EXPECT_EQ(ea.value("wheel_jobs_delivery_lateness_seconds_count"), 0);
  EXPECT_EQ(eb.value("wheel_jobs_connections"), 1);

  // A node leaving gives job 3 back: a hang_up on B.
  EXPECT_EQ(b->stop(), 0);
  BeanstalkSession other(a->port());
  EXPECT_EQ(other.call("reserve-with-timeout 10", nullptr, &body), "RESERVED 2 3");
  EXPECT_EQ(other.call("reserve-with-timeout 10", nullptr, &body), "RESERVED 3 5");
}

TEST_F(WheelJobsFleetMetricsTest, RedisDownAndBackShowsAsFailuresAndReconnects) {
  std::uint16_t ma = 0;
  auto a = node(&ma);
  BeanstalkSession c(a->port());
  ASSERT_EQ(c.put(0, "0", "60", "x"), "INSERTED 1");
  redis_.kill();
  // Clients get a clear error at once; so does a scrape (without the fleet's counts).
  const auto start = Clock::now();
  EXPECT_EQ(c.put(0, "0", "60", "y"), "INTERNAL_ERROR");
  const Exposition down = scrape(ma).e;
  EXPECT_LT(Clock::now() - start, 3s);
  EXPECT_EQ(down.value("wheel_jobs_redis_counts_read"), 0);
  EXPECT_EQ(down.families.count("wheel_jobs_jobs"), 0u);
  EXPECT_EQ(down.value("wheel_jobs_redis_connected", {{"connection", "commands"}}), 0);
  EXPECT_GE(down.value("wheel_jobs_redis_failures_total", {{"kind", "unavailable"}}) +
                down.value("wheel_jobs_redis_failures_total", {{"kind", "lost"}}),
            2)
      << "the put and the scrape's count";
  EXPECT_EQ(down.value("wheel_jobs_commands_total", {{"command", "put"}}), 2);
  // The refused put, by its cause (and logged: docs/jobs-fleet.md, "Errors you can act on").
  EXPECT_EQ(down.value("wheel_jobs_internal_errors_total", {{"cause", "redis_unavailable"}}), 1);
  EXPECT_EQ(down.value("wheel_jobs_internal_errors_total", {{"cause", "redis_error"}}), 0);
  // Back: the node reconnects by itself (backoff 50 ms doubling to 2 s) and says so.
  ASSERT_TRUE(redis_.restart());
  EXPECT_TRUE(
      wheel_test::wait_until([&] { return c.put(0, "0", "60", "z") == "INSERTED 2"; }, 15s, 20ms));
  Exposition up;
  EXPECT_TRUE(wheel_test::wait_until(
      [&] {
        up = scrape(ma).e;
        return up.value("wheel_jobs_redis_connected", {{"connection", "events"}}) == 1;
      },
      15s, 50ms));
  EXPECT_EQ(up.value("wheel_jobs_redis_counts_read"), 1);
  EXPECT_EQ(up.value("wheel_jobs_jobs", {{"state", "ready"}}), 2);
  EXPECT_GE(up.value("wheel_jobs_redis_reconnects_total", {{"connection", "commands"}}), 1);
  EXPECT_GE(up.value("wheel_jobs_redis_reconnects_total", {{"connection", "events"}}), 1);
  EXPECT_EQ(up.value("wheel_jobs_redis_connected", {{"connection", "commands"}}), 1);
  EXPECT_EQ(a->stop(), 0);
}

}  // namespace
