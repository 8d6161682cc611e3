// SPDX-License-Identifier: Apache-2.0
// wheel-jobs --store redis:// as an operator sees it: a node stopped with SIGTERM leaves
// gracefully (its clients' jobs ready again at once on the other nodes, fenced by their
// tokens), also while Redis is down; and `stats` counts producers and workers as beanstalkd does.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "support/beanstalk_session.h"
#include "support/redis_server.h"
#include "support/wait_until.h"
#include "support/wheel_jobs_node.h"

namespace {

using namespace std::chrono_literals;
using wheel_test::BeanstalkSession;
using wheel_test::field;
using wheel_test::start_node;

class WheelJobsFleetOpsTest : public ::testing::Test {
 protected:
  wheel_test::RedisServer redis_;
};

std::string stats_of(BeanstalkSession& c, const std::string& command) {
  std::string yaml;
  const std::string head = c.call(command, nullptr, &yaml);
  EXPECT_EQ(head.substr(0, 3), "OK ") << command << ": " << head;
  return yaml;
}

TEST_F(WheelJobsFleetOpsTest, ASigtermedNodeGivesItsClientsJobsBackAtOnceFencedByTokens) {
  auto a = start_node(redis_);
  auto b = start_node(redis_);
  BeanstalkSession producer(a->port()), late(a->port()), holder(a->port()), other(b->port()),
      waiter(b->port());
  // Job 1: held on A until its 3 s lease ran out, then reserved on B (a new token, a new 3 s
  // lease). A still remembers the old lease: its leave must not take the job from B.
  ASSERT_EQ(producer.put(0, "0", "3", "passed"), "INSERTED 1");
  ASSERT_EQ(late.call("reserve"), "RESERVED 1 6");
  std::string body;
  ASSERT_EQ(other.call("reserve-with-timeout 10", nullptr, &body), "RESERVED 1 6");
  // Job 2: held on A with a TTR of a minute.
  ASSERT_EQ(producer.put(0, "0", "60", "held"), "INSERTED 2");
  ASSERT_EQ(holder.call("reserve", nullptr, &body), "RESERVED 2 4");
  ASSERT_TRUE(waiter.send_all("reserve-with-timeout 30\r\n"));
  std::this_thread::sleep_for(100ms);  // let it wait (it must work either way)

  // Job 1's new lease is renewed: 3 s from here, so the checks below see it before it runs
  // out, however long the steps above took on a loaded machine.
  ASSERT_EQ(other.call("touch 1"), "TOUCHED");
  const auto stop_at = wheel_test::Clock::now();
  EXPECT_EQ(a->stop(), 0);
  // Job 1 stayed with the client on B that holds its current token.
  EXPECT_EQ(field(stats_of(other, "stats-job 1"), "state"), "reserved");
  EXPECT_EQ(other.call("delete 1"), "DELETED");
  EXPECT_EQ(waiter.read_reply(&body), "RESERVED 2 4");
  const auto waited = wheel_test::Clock::now() - stop_at;
  std::printf("node A SIGTERMed holding a job with TTR 60 s: reserved on node B after %lld ms\n",
              static_cast<long long>(
                  std::chrono::duration_cast<std::chrono::milliseconds>(waited).count()));
  EXPECT_LT(waited, 15s) << "given back at once, not after its TTR";
  const std::string job2 = stats_of(waiter, "stats-job 2");
  EXPECT_EQ(field(job2, "releases"), "0") << "a leave is not a client's release";
  EXPECT_EQ(field(job2, "reserves"), "2");
  EXPECT_EQ(field(job2, "timeouts"), "0");

  EXPECT_EQ(waiter.call("delete 2"), "DELETED");
  EXPECT_EQ(b->stop(), 0);
}

TEST_F(WheelJobsFleetOpsTest, ASigtermWhileRedisIsDownExitsZeroAndTheLeaseRunsOut) {
  auto a = start_node(redis_);
  BeanstalkSession c(a->port());
  ASSERT_EQ(c.put(0, "0", "2", "x"), "INSERTED 1");
  ASSERT_EQ(c.call("reserve"), "RESERVED 1 1");
  redis_.kill();
  const auto start = wheel_test::Clock::now();
  EXPECT_EQ(a->stop(), 0);
  EXPECT_LT(wheel_test::Clock::now() - start, 10s) << "no wait for a Redis that is gone";
  ASSERT_TRUE(redis_.restart());
  // Nothing gave it back: ready again once its 2 s lease ran out, as after a crash.
  auto b = start_node(redis_);
  BeanstalkSession d(b->port());
  EXPECT_EQ(d.call("reserve-with-timeout 10"), "RESERVED 1 1");
  EXPECT_EQ(field(stats_of(d, "stats-job 1"), "timeouts"), "1");
}

TEST_F(WheelJobsFleetOpsTest, StatsCountsProducersAndWorkersOfThisNodeAsBeanstalkd) {
  auto a = start_node(redis_);
  auto b = start_node(redis_);
  BeanstalkSession on_b(b->port());
  {
    BeanstalkSession p(a->port()), w(a->port()), idle(a->port());
    ASSERT_EQ(p.put(0, "0", "60", "x"), "INSERTED 1");
    std::string stats = stats_of(idle, "stats");
    EXPECT_EQ(field(stats, "current-producers"), "1") << stats;
    EXPECT_EQ(field(stats, "current-workers"), "0");
    EXPECT_EQ(field(stats, "current-connections"), "3");
    EXPECT_EQ(field(stats, "binlog-max-size"), "10485760");
    // A worker stays one after its reserve ended (beanstalkd: ever issued a reserve).
    EXPECT_EQ(w.call("reserve-with-timeout 0"), "RESERVED 1 1");
    EXPECT_EQ(w.call("delete 1"), "DELETED");
    EXPECT_EQ(w.call("reserve-with-timeout 0"), "TIMED_OUT");
    stats = stats_of(idle, "stats");
    EXPECT_EQ(field(stats, "current-producers"), "1");
    EXPECT_EQ(field(stats, "current-workers"), "1");
    EXPECT_EQ(field(stats, "total-jobs"), "1");
    // Per node: B's clients are neither.
    stats = stats_of(on_b, "stats");
    EXPECT_EQ(field(stats, "current-producers"), "0");
    EXPECT_EQ(field(stats, "current-workers"), "0");
    EXPECT_EQ(field(stats, "total-jobs"), "1") << "fleet-wide, from Redis";
  }
  // The connections closed: they count no more.
  BeanstalkSession again(a->port());
  EXPECT_TRUE(wheel_test::wait_until(
      [&] {
        const std::string s = stats_of(again, "stats");
        return field(s, "current-producers") == "0" && field(s, "current-workers") == "0";
      },
      10s, 20ms));
}

// A Redis that wants a password, given the way an operator keeps it out of `ps`: the URL in
// WHEEL_JOBS_STORE instead of --store. The node logs in (AUTH) and serves; a node given a wrong
// password and told not to wait for its store (--store-connect-timeout 0) answers
// INTERNAL_ERROR at once and keeps running.
TEST_F(WheelJobsFleetOpsTest, TheStoreUrlWithAPasswordComesFromTheEnvironment) {
  ASSERT_EQ(wheel_test::redis_command(redis_.port(), {"CONFIG", "SET", "requirepass", "pw@1"}),
            "OK");
  const std::string host = "127.0.0.1:" + std::to_string(redis_.port());
  const std::vector<std::string> args{WHEEL_JOBS_PATH, "--port", "0", "--log-level", "warn"};
  ASSERT_EQ(setenv("WHEEL_JOBS_STORE", ("redis://:pw%401@" + host).c_str(), 1), 0);
  wheel_test::ServerProcess good(args);
  ASSERT_EQ(setenv("WHEEL_JOBS_STORE", ("redis://:wrong@" + host).c_str(), 1), 0);
  std::vector<std::string> bad_args = args;
  bad_args.insert(bad_args.end(), {"--store-connect-timeout", "0"});
  wheel_test::ServerProcess bad(bad_args);
  unsetenv("WHEEL_JOBS_STORE");
  ASSERT_GT(good.port(), 0);
  ASSERT_GT(bad.port(), 0);
  BeanstalkSession c(good.port());
  EXPECT_EQ(c.put(0, "0", "60", "x"), "INSERTED 1");
  EXPECT_EQ(c.call("reserve-with-timeout 0"), "RESERVED 1 1");
  BeanstalkSession refused(bad.port());
  EXPECT_EQ(refused.put(0, "0", "60", "x"), "INTERNAL_ERROR");
  EXPECT_EQ(good.stop(), 0);
  EXPECT_EQ(bad.stop(), 0);
}

}  // namespace
