// SPDX-License-Identifier: Apache-2.0
// RedisClientOptions::replicas (wheel-jobs --store-replicas): on a real primary with a real
// replica (redis-server --replicaof), a change is answered only once the replica has it, a
// replica that stops answering fails changes after the replica timeout (and they succeed again
// once it is back), a script resent after NOSCRIPT waits again, and without the option no WAIT
// is sent at all.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "support/beanstalk_session.h"
#include "support/metrics_scrape.h"
#include "support/redis_store_fixture.h"
#include "support/timer_test_support.h"
#include "support/wheel_jobs_node.h"

namespace wheel::jobs {
namespace {

using wheel_test::redis_calls;
using wheel_test::redis_command;

// How long a change may wait for the replica: a replica of a loaded machine can take hundreds of
// milliseconds to acknowledge (200 ms was too short in CI); the stopped-replica test waits it out.
constexpr milliseconds kGenerous{3000};

class RedisReplicaTest : public RedisStoreTest {
 protected:
  void SetUp() override {
    ASSERT_TRUE(redis_.running());
    // The primary sends its first full copy at once, not after the default 5 s pause.
    ASSERT_EQ(redis_command(redis_.port(), {"CONFIG", "SET", "repl-diskless-sync-delay", "0"}),
              "OK");
    // No AOF on the replica: after its first sync it would write an initial AOF, and a SIGTERM
    // meanwhile is refused ("Writing initial AOF, can't exit").
    replica_.emplace(std::vector<std::string>{"--replicaof", "127.0.0.1",
                                              std::to_string(redis_.port()), "--appendonly", "no"});
    ASSERT_TRUE(replica_->running());
    // The replica's first sync, bounded; before the store connects, whose loop does not run yet.
    const auto deadline = Clock::now() + std::chrono::seconds(20);
    while (Clock::now() < deadline && !linked()) std::this_thread::sleep_for(milliseconds(20));
    ASSERT_TRUE(linked());
    RedisStoreTest::SetUp();
  }
  bool linked() {
    return redis_command(replica_->port(), {"INFO", "replication"}).find("master_link_status:up") !=
           std::string::npos;
  }
  void TearDown() override {
    if (replica_) replica_->resume();  // a stopped process would not end on SIGTERM
    RedisStoreTest::TearDown();
  }

  void connect_waiting_for(std::uint32_t replicas, milliseconds timeout) {
    RedisEndpoint endpoint;
    endpoint.host = "127.0.0.1";
    endpoint.port = static_cast<std::uint16_t>(redis_.port());
    RedisClientOptions o = test_options();
    o.replicas = replicas;
    o.replica_timeout = timeout;
    o.command_timeout = timeout + std::chrono::seconds(10);  // WAIT's answer comes first
    connect(endpoint, o);
  }
  std::string keys(const wheel_test::RedisServer& server) {
    return redis_command(server.port(), {"DBSIZE"});
  }

  std::optional<wheel_test::RedisServer> replica_;
};

TEST_F(RedisReplicaTest, AChangeIsAnsweredOnceTheReplicaHasIt) {
  // Without the option: no WAIT.
  const InsertResult first = put("q", 0, milliseconds(0), milliseconds(60'000), "a");
  ASSERT_EQ(first.status, StoreStatus::kOk) << first.error;
  EXPECT_EQ(redis_calls(redis_.port(), "wait"), 0);
  connect_waiting_for(1, kGenerous);
  for (int i = 0; i < 20; ++i) {
    const InsertResult r = put("q", 0, milliseconds(0), milliseconds(60'000), "b");
    ASSERT_EQ(r.status, StoreStatus::kOk) << r.error;
    // Answered, so on the replica: the same keys as the primary, at once.
    EXPECT_EQ(keys(*replica_), keys(redis_)) << i;
    const ClaimResult c = reserve({"q"});
    ASSERT_EQ(c.status, StoreStatus::kOk) << c.error;
    const ChangeResult d = change([&](auto done) { store_->remove(c.id, c.token, done); });
    ASSERT_EQ(d.status, StoreStatus::kOk) << d.error;
    EXPECT_EQ(keys(*replica_), keys(redis_)) << i;
  }
  EXPECT_GE(redis_calls(redis_.port(), "wait"), 60);
}

TEST_F(RedisReplicaTest, AReplicaThatStopsAnsweringFailsChangesUntilItIsBack) {
  connect_waiting_for(1, kGenerous);
  const InsertResult first = put("q", 0, milliseconds(0), milliseconds(60'000), "a");
  ASSERT_EQ(first.status, StoreStatus::kOk) << first.error;
  replica_->pause();  // SIGSTOP: still connected, acknowledges nothing
  const InsertResult r = put("q", 0, milliseconds(0), milliseconds(60'000), "b");
  EXPECT_EQ(r.status, StoreStatus::kError);
  EXPECT_NE(r.error.find("not replicated: 0 of 1 replicas acknowledged within 3000 ms"),
            std::string::npos)
      << r.error;
  replica_->resume();
  const InsertResult back = put_once_back("q", "c");
  EXPECT_EQ(back.status, StoreStatus::kOk) << back.error;
  EXPECT_EQ(keys(*replica_), keys(redis_));
}

TEST_F(RedisReplicaTest, AScriptResentAfterNoscriptWaitsAgain) {
  connect_waiting_for(1, kGenerous);
  ASSERT_EQ(put("q", 0, milliseconds(0), milliseconds(60'000), "a").status, StoreStatus::kOk);
  const long long waits = redis_calls(redis_.port(), "wait");
  ASSERT_EQ(redis_command(redis_.port(), {"SCRIPT", "FLUSH"}), "OK");
  const InsertResult r = put("q", 0, milliseconds(0), milliseconds(60'000), "b");
  ASSERT_EQ(r.status, StoreStatus::kOk) << r.error;
  // The first WAIT went behind the refused EVALSHA; the resent EVAL has its own.
  EXPECT_EQ(redis_calls(redis_.port(), "wait") - waits, 2);
  EXPECT_EQ(keys(*replica_), keys(redis_));
}

// The node passes the option to its store: INSERTED once the replica has the put, and
// INTERNAL_ERROR while the replica does not answer (when WAIT gives up at 2 s, the longest
// allowed, or at the 3 s command timeout, whichever the node sees first).
TEST_F(RedisReplicaTest, AWheelJobsNodeAnswersOnlyWhatTheReplicaHas) {
  auto node =
      wheel_test::start_node(redis_, {"--store-replicas", "1", "--store-replica-timeout", "2s"});
  wheel_test::BeanstalkSession c(node->port());
  ASSERT_EQ(c.put(0, "0", "60", "a"), "INSERTED 1");
  EXPECT_EQ(keys(*replica_), keys(redis_));
  replica_->pause();
  EXPECT_EQ(c.put(0, "0", "60", "b"), "INTERNAL_ERROR");
  replica_->resume();
  EXPECT_GE(redis_calls(redis_.port(), "wait"), 2);
  EXPECT_EQ(node->stop(), 0);
}

// --store pointed at the replica by mistake: every change is refused with READONLY. The client
// logs Redis's reason once (then at most every 10 s) and counts each.
TEST_F(RedisReplicaTest, AStoreOnTheReplicaLogsReadonlyOnceAndCountsEachRefusal) {
  connect({"127.0.0.1", static_cast<std::uint16_t>(replica_->port()), 0, "", ""});
  ::wheel::testing::LogCapture log;
  for (int i = 0; i < 3; ++i) {
    const InsertResult r = put("q", 0, milliseconds(0), milliseconds(60'000), "a");
    EXPECT_EQ(r.status, StoreStatus::kError);
    EXPECT_TRUE(r.error.starts_with("READONLY")) << r.error;
  }
  EXPECT_EQ(client_->metrics().errored(RedisErrorCause::kReadonly), 3u);
  EXPECT_EQ(log.count("READONLY You can't write against a read only replica."), 1);
  EXPECT_EQ(log.count("point --store at the primary"), 1);
}

// The same through a node: its log says READONLY once, its /metrics count it by cause.
TEST_F(RedisReplicaTest, ANodeOnTheReplicaSaysWhyInItsLogAndItsMetrics) {
  char name[] = "/tmp/wheel-jobs-log-XXXXXX";
  const int fd = mkstemp(name);
  ASSERT_GE(fd, 0);
  const auto metrics = static_cast<std::uint16_t>(wheel_test::free_port());
  auto node = std::make_unique<wheel_test::ServerProcess>(
      std::vector<std::string>{WHEEL_JOBS_PATH, "--store", replica_->url(), "--port", "0",
                               "--log-level", "warn", "--metrics-port", std::to_string(metrics)},
      fd);
  ASSERT_GT(node->port(), 0);
  wheel_test::BeanstalkSession c(node->port());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(c.put(0, "0", "60", "a"), "INTERNAL_ERROR");
  const auto e = wheel_test::scrape(metrics).e;
  EXPECT_GE(e.value("wheel_jobs_redis_errors_total", {{"cause", "readonly"}}), 3);
  EXPECT_EQ(e.value("wheel_jobs_internal_errors_total", {{"cause", "redis_error"}}), 3);
  EXPECT_GE(e.value("wheel_jobs_redis_failures_total", {{"kind", "reply"}}), 3);  // as before
  EXPECT_EQ(node->stop(), 0);
  std::ifstream in(name);
  int readonly = 0;
  std::string all;
  for (std::string line; std::getline(in, line);) {
    readonly += line.find("READONLY") != std::string::npos;
    all += line + "\n";
  }
  close(fd);
  std::remove(name);
  EXPECT_EQ(readonly, 1) << all;
}

TEST(RedisReplicaOptionsTest, AreRangeChecked) {
  uv_loop_t loop;
  uv_loop_init(&loop);
  RedisClientOptions o;
  o.replicas = kMaxRedisReplicas + 1;
  EXPECT_THROW(RedisClient(&loop, o), std::invalid_argument);
  o.replicas = 1;
  o.replica_timeout = o.command_timeout;  // it would time the WAIT's connection out first
  EXPECT_THROW(RedisClient(&loop, o), std::invalid_argument);
  o.replica_timeout = milliseconds(0);
  EXPECT_THROW(RedisClient(&loop, o), std::invalid_argument);
  uv_loop_close(&loop);
}

// wheel-jobs's options: range-checked, and only with --store. Refused before any connection.
TEST(RedisReplicaOptionsTest, WheelJobsRefusesThemOutOfRangeOrWithoutStore) {
  const std::string store = "--store redis://127.0.0.1:1 ";
  for (const auto& [args, says] : std::vector<std::pair<std::string, std::string>>{
           {store + "--store-replicas 101", "0 to 100"},
           {store + "--store-replica-timeout 3s", "1ms to 2s"},
           {store + "--store-replica-timeout 0", "1ms to 2s"},
           {"--store-replicas 1", "--store-replicas: needs --store"},
           {"--store-replica-timeout 100ms", "--store-replica-timeout: needs --store"}}) {
    const auto [status, out] = wheel_test::run_to_exit(WHEEL_JOBS_PATH, args);
    EXPECT_EQ(status, 2) << args;
    EXPECT_NE(out.find(says), std::string::npos) << args << ": " << out;
  }
}

}  // namespace
}  // namespace wheel::jobs
