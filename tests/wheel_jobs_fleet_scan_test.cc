// SPDX-License-Identifier: Apache-2.0
// wheel-jobs --store redis://: the safety scan. An idle fleet costs Redis almost nothing (the
// scan sleeps until the fleet's first timer, at most --max-scan-interval), and still no job
// depends only on a node's memory: a job whose wake-up event was lost (planted in Redis without
// one) reaches a waiting reserve within --max-scan-interval, or, once a scan has seen its due
// time, when it comes due.
//
// Clocks: the max-scan-interval bound is the node's own time, so that test runs a node in this
// process on a ManualClock and moves it by hand. The other two stay on real time: the idle
// fleet's figure is Redis's commands per real second, and a delayed job comes due on Redis's
// TIME, which no clock of ours moves.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <uv.h>

#include <future>

#include "fleet_test_lua.h"
#include "support/beanstalk_client.h"
#include "support/beanstalk_session.h"
#include "support/loop_calls.h"
#include "support/redis_server.h"
#include "support/wait_until.h"
#include "support/wheel_jobs_node.h"
#include "wheel/jobs/fleet/redis_jobs_handler.h"
#include "wheel/manual_clock.h"
#include "wheel/net/loop_timer.h"
#include "wheel/net/tcp_server.h"
#include "wheel/redis/redis_first_contact.h"

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

// A node in this process on a ManualClock: its scan timer and its reserves' timeouts run on a
// net::LoopTimer that reads the clock, so the test moves the scan's time by hand. (A ready job
// needs no clock of Redis's: its due time is not Redis TIME.)
class ManualNode {
 public:
  ManualNode(int redis_port, std::chrono::milliseconds max_scan_interval) {
    std::promise<int> bound;
    std::future<int> port = bound.get_future();
    thread_ = std::thread([this, redis_port, max_scan_interval, &bound] {
      serve(redis_port, max_scan_interval, bound);
    });
    port_ = port.get();
  }
  ~ManualNode() {
    if (server_ != nullptr) server_->shutdown();  // safe from any thread
    thread_.join();
  }
  int port() const { return port_; }
  // Moves the node's clock by `by` on its loop thread (its due timeouts run there).
  void advance(std::chrono::nanoseconds by) {
    ASSERT_TRUE(calls_->call([this, by] { clock_.advance(by); }));
  }
  wheel::jobs::RedisJobsCounters counters() {
    wheel::jobs::RedisJobsCounters c;
    EXPECT_TRUE(calls_->call([&] { c = handler_->counters(); }));
    return c;
  }
  std::size_t pending_timeouts() {
    std::size_t n = 0;
    EXPECT_TRUE(calls_->call([&] { n = timer_->pending_timeouts(); }));
    return n;
  }

 private:
  void serve(int redis_port, std::chrono::milliseconds max_scan_interval,
             std::promise<int>& bound) {
    namespace jobs = wheel::jobs;
    uv_loop_t loop;
    uv_loop_init(&loop);
    {
      wheel_test::LoopCalls calls(&loop);
      jobs::RedisClientOptions co;
      co.endpoint.host = "127.0.0.1";
      co.endpoint.port = static_cast<std::uint16_t>(redis_port);
      jobs::RedisClient client(&loop, co);
      jobs::RedisClient events(&loop, co);
      jobs::RedisStore store(client);
      wheel::TimerOptions tick;
      tick.tick_duration = 1ms;
      wheel::net::LoopTimer timer(&loop, clock_, tick);
      jobs::RedisJobsOptions options;
      options.max_scan_interval = max_scan_interval;
      jobs::RedisJobsHandler handler(store, events, options);
      wheel::net::TcpServerOptions so;
      so.port = 0;
      so.framing = wheel::net::Framing::kBytes;
      wheel::net::TcpServer server(&loop, so, handler);
      handler.on_shutdown_also([&] {
        client.stop();
        events.stop();
        timer.close();
      });
      client.start();
      events.start();
      // As wheel-jobs does before it listens: the first scan then finds Redis there.
      EXPECT_EQ(jobs::wait_for_first_reply(&loop, client, 10s), "");
      const int port = server.listen();
      handler.attach(server, &timer);
      calls_ = &calls;
      timer_ = &timer;
      handler_ = &handler;
      server_ = &server;
      bound.set_value(port);
      uv_run(&loop, UV_RUN_DEFAULT);
      client.stop();
      events.stop();
      timer.close();
      calls.close();
      uv_run(&loop, UV_RUN_DEFAULT);
    }
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
  }

  wheel::ManualClock clock_;  // moved on the loop thread only (advance())
  std::thread thread_;
  int port_ = 0;
  wheel_test::LoopCalls* calls_ = nullptr;
  wheel::net::LoopTimer* timer_ = nullptr;
  wheel::jobs::RedisJobsHandler* handler_ = nullptr;
  wheel::net::TcpServer* server_ = nullptr;
};

// Real time: the figure is Redis's commands per real second over two node processes.
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
  ManualNode node(redis.port(), 2s);
  ASSERT_GT(node.port(), 0);
  node.advance(1ms);  // the first scan, which attach() set for at once
  // Its answer sets the next one, max-scan-interval on (nothing waits: no earlier timer).
  ASSERT_TRUE(wheel_test::wait_until([&] { return node.pending_timeouts() == 1; }, 10s));
  EXPECT_EQ(node.counters().scans, 1u);
  auto scripts = [&] {
    return wheel_test::redis_calls(redis.port(), "evalsha") +
           wheel_test::redis_calls(redis.port(), "eval");
  };
  const long long before = scripts();
  BeanstalkSession w(node.port());
  ASSERT_TRUE(w.send_all("reserve-with-timeout 30\r\n"));
  // Its claim ran in Redis before the job below exists: it waits, with nothing pending anywhere.
  ASSERT_TRUE(wheel_test::wait_until([&] { return scripts() > before; }, 10s));
  ASSERT_EQ(plant_without_event(redis, "default", 0), "1");  // ready, nobody told
  node.advance(1998ms);  // 1999 ms: the second scan is not due yet
  EXPECT_EQ(node.counters().scans, 1u);
  node.advance(3ms);  // past the 2 s bound and its tick
  EXPECT_EQ(node.counters().scans, 2u);
  std::string body;
  EXPECT_EQ(w.read_reply(&body), "RESERVED 1 4");  // found by a scan, not a 30 s time-out
  EXPECT_EQ(body, "lost");
}

// The front's timeouts on the Redis backend run on the node's LoopTimer too: on a ManualClock a
// reserve-with-timeout answers TIMED_OUT when the node's clock passes its timeout, not one
// nanosecond before (no job: Redis's TIME plays no part), and nothing waits on real time.
TEST(WheelJobsFleetScanTest, AReserveWithTimeoutEndsOnTheNodesClockNeverBefore) {
  RedisServer redis;
  ManualNode node(redis.port(), 60s);
  ASSERT_GT(node.port(), 0);
  node.advance(1ms);  // the first scan, which attach() set for at once; its answer sets the next
  ASSERT_TRUE(wheel_test::wait_until([&] { return node.pending_timeouts() == 1; }, 10s));
  wheel_test::Client c(node.port());
  ASSERT_TRUE(c.connected());
  // Half a millisecond off the timer's 1 ms ticks, so that a tick's rounding hides no early end.
  node.advance(500us);
  c.send("reserve-with-timeout 5\r\n");  // at 1.5 ms on the node's clock
  ASSERT_TRUE(wheel_test::wait_until([&] { return node.pending_timeouts() == 2; }, 10s));
  node.advance(4999ms);
  EXPECT_TRUE(c.silent_for(100));
  node.advance(1ms - 1ns);  // one nanosecond before 5 s after the request
  EXPECT_TRUE(c.silent_for(100));
  node.advance(2ms + 1ns);  // a tick after
  EXPECT_EQ(c.line(), "TIMED_OUT");
  EXPECT_EQ(c.ask("list-tube-used\r\n"), "USING default");  // the connection goes on
}

// Real time: the job comes due 3 s after Redis's TIME, and the node's second scan is set from
// the due time Redis reports (the fleet's first timer), so only real seconds can pass here.
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
