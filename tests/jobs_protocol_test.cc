// SPDX-License-Identifier: Apache-2.0
// beanstalkd's protocol as wheel-jobs serves it, one suite over every backend: the in-process
// queue memory only, the queue on its log (--dir), and the Redis store (--store, a real
// redis-server from tests/support). Each case runs the wheel-jobs program on a port the kernel
// picks and talks to it over sockets; a backend passes the suite or the front end has two
// behaviours. What only one backend can show stays beside it: the log's disk in
// jobs_server_handler_test and wheel_jobs_test, the fleet's nodes in wheel_jobs_fleet_*_test.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "support/beanstalk_client.h"
#include "support/beanstalk_session.h"
#include "support/child_process.h"
#include "support/never_early.h"
#include "support/tube_order.h"
#include "support/wait_until.h"
#include "support/wheel_jobs_process.h"
#ifdef WHEEL_JOBS_TEST_REDIS
#include "support/redis_server.h"
#endif

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using wheel_test::BeanstalkSession;
using wheel_test::Client;
using wheel_test::ServerProcess;

enum class Backend { kMemory, kLog, kRedis };

std::string backend_name(const ::testing::TestParamInfo<Backend>& info) {
  switch (info.param) {
    case Backend::kMemory:
      return "Memory";
    case Backend::kLog:
      return "Log";
    case Backend::kRedis:
      return "Redis";
  }
  return "Unknown";
}

class BeanstalkProtocolTest
    : public wheel_test::WheelJobsProcessFixture<::testing::TestWithParam<Backend>> {
 protected:
  ~BeanstalkProtocolTest() override {
    server.reset();  // before the directory and the redis-server it serves from
    std::error_code ignored;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
  }

  // Starts wheel-jobs on this test's backend with `--port 0 --log-level warn` and `extra`.
  void start(std::vector<std::string> extra = {}) {
    std::vector<std::string> args;
    if (GetParam() == Backend::kLog) {
      char tmpl[] = "/tmp/wheel-jobs-protocol-XXXXXX";
      ASSERT_NE(mkdtemp(tmpl), nullptr);
      dir_ = tmpl;
      args.insert(args.end(), {"--dir", dir_});
    }
#ifdef WHEEL_JOBS_TEST_REDIS
    if (GetParam() == Backend::kRedis) {
      redis_ = std::make_unique<wheel_test::RedisServer>();
      ASSERT_TRUE(redis_->running());
      args.insert(args.end(), {"--store", redis_->url()});
    }
#endif
    args.insert(args.end(), extra.begin(), extra.end());
    WheelJobsProcessFixture::start(std::move(args));
  }

#ifdef WHEEL_JOBS_TEST_REDIS
  std::unique_ptr<wheel_test::RedisServer> redis_;  // kRedis
#endif
  std::string dir_;  // kLog
};

// Sends each request in turn on `c` and expects its reply line.
void expect_replies(Client& c, const std::vector<std::pair<std::string, std::string>>& exchanges) {
  for (const auto& [request, reply] : exchanges) EXPECT_EQ(c.ask(request), reply) << request;
}

TEST_P(BeanstalkProtocolTest, EveryErrorReplyOfTheParser) {
  start({"--max-job-size", "10"});
  auto c = client();
  expect_replies(*c, {{"frobnicate\r\n", "UNKNOWN_COMMAND"},
                      {"put 0 0 x 1\r\n", "BAD_FORMAT"},
                      {"use -bad\r\n", "BAD_FORMAT"}});
  // A body longer than announced: the announced bytes + 2 are consumed, the rest ("\r\n", an
  // empty line) is the next command, as in beanstalkd.
  EXPECT_EQ(c->ask("put 0 0 10 3\r\nabcde\r\n"), "EXPECTED_CRLF");
  EXPECT_EQ(c->line(), "UNKNOWN_COMMAND");
  EXPECT_EQ(c->ask("put 0 0 10 11\r\n01234567890\r\n"), "JOB_TOO_BIG");
  EXPECT_EQ(c->ask(std::string(300, 'a') + "\r\n"), "BAD_FORMAT");  // line over 224 bytes
  // The connection goes on after each.
  EXPECT_EQ(c->ask("put 0 0 10 2\r\nok\r\n"), "INSERTED 1");
}

// The model's refusals every backend gives (a limit of the in-process queue, --max-jobs, is
// wheel_jobs_test's).
TEST_P(BeanstalkProtocolTest, EveryErrorReplyOfTheModel) {
  start();
  auto c = client();
  expect_replies(*c, {{"delete 99\r\n", "NOT_FOUND"},
                      {"peek 99\r\n", "NOT_FOUND"},
                      {"ignore default\r\n", "NOT_IGNORED"},
                      {"reserve-with-timeout 0\r\n", "TIMED_OUT"},
                      {"put 0 0 1 1\r\na\r\n", "INSERTED 1"},
                      {"reserve\r\n", "RESERVED 1 1"}});
  EXPECT_EQ(c->bytes(3), "a\r\n");
  // TTR 1 s: the job is in its safety margin at once.
  EXPECT_EQ(c->ask("reserve\r\n"), "DEADLINE_SOON");
  EXPECT_EQ(c->ask("put 0 0 1 1\r\nb\r\n"), "INSERTED 2");
  EXPECT_EQ(kill(server->pid(), SIGUSR1), 0);
  std::string reply;
  for (int i = 0; i < 100 && reply != "DRAINING"; ++i) {  // the signal arrives soon
    reply = c->ask("put 0 0 1 1\r\nd\r\n");
    if (reply != "DRAINING") usleep(20'000);
  }
  EXPECT_EQ(reply, "DRAINING");
}

TEST_P(BeanstalkProtocolTest, ABlockedReserveIsServedByAnotherClientsPutAndPipelinedRequestsWait) {
  start();
  auto worker = client();
  auto producer = client();
  worker->send("reserve\r\nlist-tube-used\r\n");
  EXPECT_TRUE(worker->silent_for(200));
  EXPECT_EQ(producer->ask("put 5 0 60 5\r\nhello\r\n"), "INSERTED 1");
  EXPECT_EQ(worker->line(), "RESERVED 1 5");
  EXPECT_EQ(worker->bytes(7), "hello\r\n");
  EXPECT_EQ(worker->line(), "USING default");
}

TEST_P(BeanstalkProtocolTest, ADecimalDelayIsHonouredToTheMillisecond) {
  start();
  auto c = client();
  EXPECT_EQ(c->ask("put 0 0.300 60 1\r\nx\r\n"), "INSERTED 1");
  EXPECT_EQ(c->ask("reserve-with-timeout 0\r\n"), "TIMED_OUT");
  EXPECT_EQ(c->ask("reserve-with-timeout 10\r\n"), "RESERVED 1 1");
}

// A delay, a pause, a reserve timeout and a TTR of 5 ms, 100 times each: none ends before 5 ms
// have passed on this test's clock (the loop's clock is read in whole milliseconds; a deadline
// started from a truncated reading ended up to 1 ms early in ~5 % of tries). With Redis, TIME
// sets the due times of delays, pauses and TTRs, the node's clock the reserve timeouts; few TTR
// tries there: a node finds a lease that ran out at its next scan (a second later).
TEST_P(BeanstalkProtocolTest, NoDeadlineEndsEarly) {
  start();
  const int ttr_tries = GetParam() == Backend::kRedis ? 3 : 100;
  const std::vector<std::string> early =
      wheel_test::early_deadlines(server->port(), 100, "0.005", ttr_tries);
  EXPECT_TRUE(early.empty()) << early.size() << " early, first: " << early.front();
}

TEST_P(BeanstalkProtocolTest, ListTubesKeepsCreationOrder) {
  start();
  EXPECT_EQ(wheel_test::tube_order_steps(server->port()), wheel_test::kTubeOrderLists);
}

// A tube lives while a client uses or watches it (stats-tube counts them) and goes with the
// last one when it holds no job, as beanstalkd's. The session's tubes are the front's
// (SessionTubes); each backend keeps the tube from what the front tells it.
TEST_P(BeanstalkProtocolTest, TubesLiveWhileUsedOrWatched) {
  start();
  auto watcher = client();
  auto user = client();
  auto look = client();
  EXPECT_EQ(watcher->ask("watch kept\r\n"), "WATCHING 2");
  EXPECT_EQ(user->ask("use held\r\n"), "USING held");
  EXPECT_EQ(look->yaml("list-tubes\r\n"), "---\n- default\n- kept\n- held\n\r\n");
  const std::string kept = look->yaml("stats-tube kept\r\n");
  EXPECT_NE(kept.find("current-watching: 1\n"), std::string::npos) << kept;
  EXPECT_NE(kept.find("current-using: 0\n"), std::string::npos) << kept;
  const std::string held = look->yaml("stats-tube held\r\n");
  EXPECT_NE(held.find("current-using: 1\n"), std::string::npos) << held;
  EXPECT_NE(held.find("current-watching: 0\n"), std::string::npos) << held;
  EXPECT_EQ(watcher->ask("ignore kept\r\n"), "WATCHING 1");
  EXPECT_EQ(look->ask("stats-tube kept\r\n"), "NOT_FOUND");
  user->close_now();  // the server notices when it reads the end: waited for, bounded
  EXPECT_TRUE(wheel_test::wait_until(
      [&] { return look->yaml("list-tubes\r\n") == "---\n- default\n\r\n"; }));
}

TEST_P(BeanstalkProtocolTest, AClientGoneMidBodyOrWhileReservingReleasesEverything) {
  start();
  auto gone = client();
  gone->send("put 0 0 60 100\r\nonly part of it");
  auto holder = client();
  EXPECT_EQ(holder->ask("put 0 0 60 1\r\nx\r\n"), "INSERTED 1");
  EXPECT_EQ(holder->ask("reserve\r\n"), "RESERVED 1 1");
  holder->bytes(3);
  holder->send("reserve\r\n");  // blocks
  gone->close_now();
  holder->close_now();
  auto other = client();
  EXPECT_EQ(other->ask("reserve-with-timeout 5\r\n"), "RESERVED 1 1");  // released on close
  other->bytes(3);
  other->send("stats\r\n");
  std::string head = other->line();
  ASSERT_TRUE(head.starts_with("OK ")) << head;
  std::string yaml = other->bytes(std::stoul(head.substr(3)) + 2);
  EXPECT_NE(yaml.find("current-connections: 1\n"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("current-waiting: 0\n"), std::string::npos) << yaml;
}

TEST_P(BeanstalkProtocolTest, WatchedTubesAreBoundedPerClient) {
  start();
  auto c = client();
  std::string request;
  for (int i = 0; i < 1100; ++i) request += "watch t" + std::to_string(i) + "\r\n";
  c->send(request);
  int watching = 0, refused = 0;
  for (int i = 0; i < 1100; ++i) {
    std::string reply = c->line();
    if (reply.starts_with("WATCHING")) watching++;
    if (reply == "OUT_OF_MEMORY") refused++;
  }
  EXPECT_EQ(watching, 1023);  // 1024 with "default"
  EXPECT_EQ(refused, 77);
  // ignore: a tube not watched leaves the count; the last one watched is kept.
  EXPECT_EQ(c->ask("ignore nosuch\r\n"), "WATCHING 1024");
  EXPECT_EQ(c->ask("ignore default\r\n"), "WATCHING 1023");
  EXPECT_EQ(c->ask("watch t1099\r\n"), "WATCHING 1024");
}

TEST_P(BeanstalkProtocolTest, ManyBlockedClientsOneJobOneReply) {
  start();
  std::vector<std::unique_ptr<Client>> waiters;
  for (int i = 0; i < 200; ++i) {
    waiters.push_back(client());
    waiters.back()->send("reserve\r\n");
  }
  auto producer = client();
  // All 200 wait before the put.
  std::string stats;
  for (int i = 0; i < 200 && stats.find("current-waiting: 200\n") == std::string::npos; ++i) {
    producer->send("stats\r\n");
    std::string head = producer->line();
    stats = producer->bytes(std::stoul(head.substr(3)) + 2);
  }
  ASSERT_NE(stats.find("current-waiting: 200\n"), std::string::npos);
  EXPECT_EQ(producer->ask("put 0 0 60 1\r\nx\r\n"), "INSERTED 1");
  EXPECT_EQ(waiters[0]->line(), "RESERVED 1 1");  // the first to wait
  for (int i = 1; i < 200; ++i) EXPECT_TRUE(waiters[i]->silent_for(i == 1 ? 100 : 0));
}

TEST_P(BeanstalkProtocolTest, DeadlineSoonAndTimedOutAsBeanstalkd) {
  start();
  BeanstalkSession c(server->port());
  ASSERT_EQ(c.put(0, "0", "1", "x"), "INSERTED 1");
  EXPECT_EQ(c.call("reserve"), "RESERVED 1 1");
  EXPECT_EQ(c.call("reserve"), "DEADLINE_SOON");  // TTR 1 s: already in its last second
  // Pipelined: each reply in its request's order, whether it comes from the backend at once or
  // not.
  ASSERT_TRUE(c.send_all("list-tube-used\r\nreserve\r\nstats-job 1\r\nlist-tube-used\r\n"));
  EXPECT_EQ(c.read_reply(), "USING default");
  EXPECT_EQ(c.read_reply(), "DEADLINE_SOON");
  EXPECT_EQ(c.read_reply().substr(0, 3), "OK ");
  EXPECT_EQ(c.read_reply(), "USING default");
  EXPECT_EQ(c.call("reserve-with-timeout 0"), "DEADLINE_SOON");
  EXPECT_EQ(c.call("delete 1"), "DELETED");
  EXPECT_EQ(c.call("reserve-with-timeout 0"), "TIMED_OUT");
  EXPECT_EQ(c.call("release 9 0 0"), "NOT_FOUND");
  EXPECT_EQ(c.call("use other"), "USING other");
  EXPECT_EQ(c.call("watch other"), "WATCHING 2");
  EXPECT_EQ(c.call("ignore default"), "WATCHING 1");
  EXPECT_EQ(c.call("ignore other"), "NOT_IGNORED");
  EXPECT_EQ(c.call("pause-tube nosuch 1"), "NOT_FOUND");
  EXPECT_EQ(c.call("pause-tube other 0"), "PAUSED");
  EXPECT_EQ(c.call("kick 5"), "KICKED 0");
  EXPECT_EQ(c.call("bogus"), "UNKNOWN_COMMAND");
}

TEST_P(BeanstalkProtocolTest, WaitingReservesEndAsBeanstalkdSays) {
  start();
  BeanstalkSession c(server->port()), p(server->port());
  // reserve-with-timeout that finds nothing: TIMED_OUT after its timeout, not before.
  auto begin = Clock::now();
  EXPECT_EQ(c.call("reserve-with-timeout 1"), "TIMED_OUT");
  EXPECT_GE(Clock::now() - begin, 1s);
  // A waiting reserve whose client holds a job entering its last second: DEADLINE_SOON.
  ASSERT_EQ(p.put(0, "0", "2.500", "held"), "INSERTED 1");
  EXPECT_EQ(c.call("reserve"), "RESERVED 1 4");
  begin = Clock::now();
  EXPECT_EQ(c.call("reserve"), "DEADLINE_SOON");
  EXPECT_GE(Clock::now() - begin, 1s);  // 2.5 s TTR: the last second began 1.5 s in
  EXPECT_EQ(c.call("delete 1"), "DELETED");
  // A paused tube holds its ready job back from a waiting reserve until the pause ends.
  ASSERT_EQ(p.put(0, "0", "60", "later"), "INSERTED 2");
  EXPECT_EQ(p.call("pause-tube default 1"), "PAUSED");
  begin = Clock::now();
  std::string body;
  EXPECT_EQ(c.call("reserve", nullptr, &body), "RESERVED 2 5");
  EXPECT_GE(Clock::now() - begin, 900ms);
  EXPECT_EQ(server->stop(), 0);
}

TEST_P(BeanstalkProtocolTest, SigtermExitsZero) {
  start();
  auto c = client();
  EXPECT_EQ(c->ask("put 0 0 60 1\r\nx\r\n"), "INSERTED 1");
  EXPECT_EQ(server->stop(), 0);
}

INSTANTIATE_TEST_SUITE_P(Backends, BeanstalkProtocolTest,
                         ::testing::Values(Backend::kMemory, Backend::kLog
#ifdef WHEEL_JOBS_TEST_REDIS
                                           ,
                                           Backend::kRedis
#endif
                                           ),
                         backend_name);

}  // namespace
