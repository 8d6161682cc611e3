// SPDX-License-Identifier: Apache-2.0
// The front end's timeouts on a ManualClock: BeanstalkServerHandler (BeanstalkFront over the
// in-process queue, memory only) in-process with its net::LoopTimer on a clock the test moves
// by hand (tests/support/embedded_queue_server.h). reserve-with-timeout, a waiting reserve
// served before its deadline, DEADLINE_SOON and a delay end exactly when the clock says: never
// before their time, and within a tick and the queue's clock granularity (1 ms each) after.
// No test here waits on real time for a deadline; a negative check ("nothing yet") looks once
// the loop ran everything due, with a bounded read.
//
// The requests are made 0.9 ms past a whole millisecond: the queue reads whole milliseconds,
// truncated, so a deadline not pushed out by that truncation would end up to 0.9 ms early. The
// front's timer ticks every 0.1 ms here (wheel-jobs': 1 ms), so a tick's lateness cannot hide
// that from the checks one nanosecond before the time.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "support/beanstalk_client.h"
#include "support/embedded_queue_server.h"
#include "support/wait_until.h"
#include "wheel/logger.h"

namespace {

using namespace std::chrono_literals;
using wheel_test::Client;
using wheel_test::EmbeddedQueueServer;

constexpr std::chrono::nanoseconds kStart = 900us;  // when the requests are made

class FrontClockTest : public ::testing::Test {
 protected:
  FrontClockTest() : server(manual()) {}
  static wheel_test::EmbeddedQueueOptions manual() {
    wheel_test::EmbeddedQueueOptions options;
    options.manual = true;
    options.manual_tick = 100us;
    return options;
  }
  void SetUp() override {
    wheel::logger()->set_level(spdlog::level::warn);
    ASSERT_NE(server.port(), 0);
    server.advance_to(kStart);
  }
  void TearDown() override { wheel::logger()->set_level(spdlog::level::info); }

  // Waits (bounded, on events) until `n` reserves wait in the queue.
  void await_waiting(std::uint64_t n) {
    ASSERT_TRUE(wheel_test::wait_until([&] {
      std::uint64_t waiting = 0;
      EXPECT_TRUE(
          server.call([&](const wheel::jobs::JobQueue& q) { waiting = q.counters().waiting; }));
      return waiting == n;
    }));
  }
  // Nothing arrived on `c` once the loop ran what was due (advance() returned after it ran; the
  // write of a turn follows it at once).
  static bool silent(Client& c) { return c.silent_for(100); }
  // Sends a blocking request on `c` and waits until the queue holds it as its one waiter.
  void block(Client& c, const char* request) {
    c.send(request);
    await_waiting(1);
  }

  EmbeddedQueueServer server;
};

TEST_F(FrontClockTest, ReserveWithTimeoutEndsWhenTheClockPassesItsTimeoutNeverBefore) {
  Client c(server.port());
  ASSERT_TRUE(c.connected());
  block(c, "reserve-with-timeout 5\r\n");
  server.advance_to(kStart + 4999ms);
  EXPECT_TRUE(silent(c));
  server.advance_to(kStart + 5s - 1ns);  // one nanosecond before its time
  EXPECT_TRUE(silent(c));
  server.advance_to(kStart + 5s + 2ms);  // a tick and the clock's granularity after it
  EXPECT_EQ(c.line(), "TIMED_OUT");
  // The connection goes on: the timeout was its barrier.
  EXPECT_EQ(c.ask("list-tube-used\r\n"), "USING default");
}

TEST_F(FrontClockTest, AWaiterIsServedWhenAJobArrivesBeforeItsDeadlineAndNeverTimesOut) {
  Client waiter(server.port());
  Client producer(server.port());
  ASSERT_TRUE(waiter.connected() && producer.connected());
  block(waiter, "reserve-with-timeout 5\r\n");
  server.advance_to(kStart + 4999ms);
  EXPECT_TRUE(silent(waiter));
  ASSERT_EQ(producer.ask("put 0 0 60 3\r\nabc\r\n"), "INSERTED 1");
  EXPECT_EQ(waiter.line(), "RESERVED 1 3");
  EXPECT_EQ(waiter.bytes(5), "abc\r\n");
  server.advance_to(kStart + 6s);  // past the wait's deadline: it ended, nothing more comes
  EXPECT_TRUE(silent(waiter));
  EXPECT_EQ(waiter.ask("delete 1\r\n"), "DELETED");  // still its job (TTR 60 s)
}

// A waiting reserve of a session that holds a job whose TTR enters its last second gets
// DEADLINE_SOON then, not before; the job goes back to ready when its TTR ends.
TEST_F(FrontClockTest, DeadlineSoonComesWhenTheTtrEntersItsLastSecondNeverBefore) {
  Client worker(server.port());
  ASSERT_TRUE(worker.connected());
  ASSERT_EQ(worker.ask("put 0 0 3 1\r\nx\r\n"), "INSERTED 1");
  ASSERT_EQ(worker.ask("reserve\r\n"), "RESERVED 1 1");
  ASSERT_EQ(worker.bytes(3), "x\r\n");
  block(worker, "reserve\r\n");
  server.advance_to(kStart + 2s - 1ns);  // TTR 3 s: its last second starts at 2 s
  EXPECT_TRUE(silent(worker));
  server.advance_to(kStart + 2s + 2ms);
  EXPECT_EQ(worker.line(), "DEADLINE_SOON");
  server.advance_to(kStart + 3s - 1ns);
  EXPECT_EQ(worker.ask("touch 1\r\n"), "TOUCHED");  // still its job: TTR 3 s from now
  server.advance_to(kStart + 6s + 2ms);
  EXPECT_EQ(worker.ask("reserve-with-timeout 0\r\n"), "RESERVED 1 1");  // TTR ran out: ready
  EXPECT_EQ(worker.bytes(3), "x\r\n");
  const std::string stats = worker.yaml("stats-job 1\r\n");
  EXPECT_NE(stats.find("timeouts: 1\n"), std::string::npos) << stats;
}

TEST_F(FrontClockTest, ABlockedReserveGetsADelayedJobWhenItsDelayEndsNeverBefore) {
  Client waiter(server.port());
  Client producer(server.port());
  ASSERT_TRUE(waiter.connected() && producer.connected());
  block(waiter, "reserve\r\n");
  ASSERT_EQ(producer.ask("put 0 3 60 2\r\nhi\r\n"), "INSERTED 1");
  server.advance_to(kStart + 3s - 1ns);
  EXPECT_TRUE(silent(waiter));
  server.advance_to(kStart + 3s + 2ms);
  EXPECT_EQ(waiter.line(), "RESERVED 1 2");
  EXPECT_EQ(waiter.bytes(4), "hi\r\n");
}

}  // namespace
