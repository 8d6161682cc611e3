// SPDX-License-Identifier: Apache-2.0
// RedisCluster on a real Redis Cluster (tests/support/redis_cluster.h: 3 primaries, 3 replicas,
// cluster-node-timeout 1 s): commands reach the primary serving their key's slot (checked with
// the node's own CLUSTER KEYSLOT and DBSIZE), scripts are loaded on every primary and run with
// their KEYS, a slot moved away is followed (MOVED), a slot being moved is followed key by key
// (ASK), a slot no node serves is retried within the stated window and then failed, and a
// SIGKILLed primary is followed to the replica the cluster promotes. Waits are bounded
// (seconds); no assertion is on time.
#include <gtest/gtest.h>
#include <uv.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cluster_test_lua.h"
#include "support/redis_cluster.h"
#include "support/wait_until.h"
#include "wheel/redis/redis_cluster.h"
#include "wheel/redis/redis_cluster_slot.h"

namespace wheel::jobs {
namespace {

using std::chrono::milliseconds;
using wheel_test::Clock;
using wheel_test::redis_command;
using wheel_test::redis_session;

class RedisClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    group_ = new wheel_test::RedisClusterGroup({.primaries = 3, .replicas_each = 1});
    ASSERT_TRUE(group_->ready()) << "the cluster did not come up";
  }
  static void TearDownTestSuite() {
    delete group_;
    group_ = nullptr;
  }
  void SetUp() override {
    if (group_ == nullptr) GTEST_SKIP() << "no cluster";
    uv_loop_init(&loop_);
  }
  void TearDown() override {
    if (cluster_) cluster_->stop();
    uv_run(&loop_, UV_RUN_DEFAULT);
    cluster_.reset();
    uv_loop_close(&loop_);
  }

  RedisCluster& start(std::chrono::milliseconds retry_window = milliseconds(20000)) {
    RedisClusterOptions o;
    std::string error;
    o.endpoint = *parse_redis_cluster_url(group_->url(2), &error);
    o.node.command_timeout = milliseconds(2000);
    o.node.min_backoff = milliseconds(20);
    o.node.max_backoff = milliseconds(500);
    o.retry_window = retry_window;
    cluster_ = std::make_unique<RedisCluster>(&loop_, o);
    for (RedisScript* script : scripts_) cluster_->preload(script);
    cluster_->start();
    EXPECT_TRUE(run_until([&] { return cluster_->metrics().refreshes > 0; })) << "no slot map";
    return *cluster_;
  }
  template <class F>
  bool run_until(F done, std::chrono::seconds bound = std::chrono::seconds(30)) {
    const auto deadline = Clock::now() + bound;
    while (!done() && Clock::now() < deadline) {
      uv_run(&loop_, UV_RUN_NOWAIT);
      std::this_thread::sleep_for(milliseconds(1));
    }
    return done();
  }
  RedisValue call(std::vector<std::string> args) {
    std::optional<RedisValue> reply;
    cluster_->command(std::move(args), [&](const RedisValue& v) { reply = v; });
    EXPECT_TRUE(run_until([&] { return reply.has_value(); })) << "no reply";
    return reply.value_or(RedisValue::error("no reply"));
  }
  // A key whose slot the primary on `port` serves, distinct per `n`.
  static std::string key_on(int port, int n) {
    for (int i = 0;; ++i) {
      std::string key = "k" + std::to_string(n) + "-" + std::to_string(i);
      if (group_->primary_of(redis_key_slot(key)) == port) return key;
    }
  }

  static wheel_test::RedisClusterGroup* group_;
  uv_loop_t loop_;
  std::unique_ptr<RedisCluster> cluster_;
  std::vector<RedisScript*> scripts_;
};
wheel_test::RedisClusterGroup* RedisClusterTest::group_ = nullptr;

TEST_F(RedisClusterTest, EachCommandReachesThePrimaryServingItsKeysSlot) {
  for (int port : group_->primary_ports()) redis_command(port, {"FLUSHALL"});
  RedisCluster& c = start();
  EXPECT_EQ(c.map().primaries().size(), 3u);
  constexpr int kKeys = 200;
  for (int i = 0; i < kKeys; ++i) {
    const std::string key = "key:" + std::to_string(i);
    ASSERT_EQ(call({"SET", key, std::to_string(i)}).str, "OK") << key;
  }
  long long total = 0;
  for (int port : group_->primary_ports())
    total += std::atoll(redis_command(port, {"DBSIZE"}).c_str());
  EXPECT_EQ(total, kKeys);
  for (int i = 0; i < kKeys; ++i) {
    const std::string key = "key:" + std::to_string(i);
    const int slot = redis_key_slot(key);
    const int owner = group_->primary_of(slot);
    // The node's own hash agrees with ours, and the key is on the node that serves the slot.
    EXPECT_EQ(redis_command(owner, {"CLUSTER", "KEYSLOT", key}), std::to_string(slot)) << key;
    EXPECT_EQ(redis_command(owner, {"GET", key}), std::to_string(i)) << key;
    EXPECT_EQ(call({"GET", key}).str, std::to_string(i)) << key;
  }
  EXPECT_EQ(c.metrics().moved, 0u);
  EXPECT_EQ(c.metrics().asked, 0u);
}

TEST_F(RedisClusterTest, ScriptsAreLoadedOnEveryPrimaryAndRunWithTheirKeys) {
  RedisScript set_twice{std::string(wheel_test::cluster_lua::kSetAndAppend)};
  scripts_.push_back(&set_twice);
  RedisCluster& c = start();
  ASSERT_TRUE(run_until([&] { return !set_twice.sha.empty(); }));
  for (int port : group_->primary_ports()) {
    EXPECT_TRUE(run_until(
        [&] {
          return redis_command(port, {"SCRIPT", "EXISTS", set_twice.sha}) == "1";
        },
        std::chrono::seconds(10)))
        << "not loaded on " << port;
  }
  for (int port : group_->primary_ports()) {
    const std::string tag = "{" + key_on(port, 7) + "}";
    std::optional<RedisValue> reply;
    c.eval(set_twice, {tag + ":a", tag + ":b"}, {"x"}, [&](const RedisValue& v) { reply = v; });
    ASSERT_TRUE(run_until([&] { return reply.has_value(); }));
    EXPECT_FALSE(reply->is_error()) << reply->str;
    EXPECT_EQ(redis_command(port, {"GET", tag + ":a"}), "x");
  }
  EXPECT_EQ(c.metrics().moved, 0u);
}

TEST_F(RedisClusterTest, ASlotMovedAwayIsFollowedOnMoved) {
  RedisCluster& c = start();
  const auto primaries = group_->primary_ports();
  const int from = primaries[0];
  const int to = primaries[1];
  const std::string key = key_on(from, 1);
  const int slot = redis_key_slot(key);
  ASSERT_EQ(call({"SET", key, "before"}).str, "OK");
  const auto refreshes = c.metrics().refreshes;
  ASSERT_TRUE(group_->begin_moving(slot, from, to));
  ASSERT_TRUE(group_->finish_moving(slot, from, to));
  // The client's map still names `from`: it answers MOVED, the client goes to `to`.
  EXPECT_EQ(call({"GET", key}).str, "before");
  EXPECT_EQ(c.metrics().moved, 1u);
  EXPECT_EQ(call({"SET", key, "after"}).str, "OK");
  EXPECT_EQ(redis_command(to, {"GET", key}), "after");
  EXPECT_TRUE(run_until([&] { return c.metrics().refreshes > refreshes; }));
  EXPECT_EQ(*c.map().primary_of(static_cast<std::uint16_t>(slot)),
            (RedisAddress{"127.0.0.1", static_cast<std::uint16_t>(to)}));
  EXPECT_EQ(call({"GET", key}).str, "after");
  EXPECT_EQ(c.metrics().moved, 1u) << "the refreshed map sends it straight there";
}

TEST_F(RedisClusterTest, ASlotBeingMovedIsFollowedKeyByKeyOnAsk) {
  RedisCluster& c = start();
  const auto primaries = group_->primary_ports();
  const int from = primaries[1];
  const int to = primaries[2];
  const std::string tag = "{" + key_on(from, 2) + "}";
  const int slot = redis_key_slot(tag);
  ASSERT_EQ(call({"SET", tag + ":old", "here"}).str, "OK");
  ASSERT_TRUE(group_->begin_moving(slot, from, to));
  // A key still on `from` is served there; a new one is not there, so `from` answers ASK and
  // the command goes to `to` after ASKING.
  EXPECT_EQ(call({"GET", tag + ":old"}).str, "here");
  EXPECT_EQ(c.metrics().asked, 0u);
  EXPECT_EQ(call({"SET", tag + ":new", "there"}).str, "OK");
  EXPECT_EQ(c.metrics().asked, 1u);
  EXPECT_EQ(redis_session(to, {{"ASKING"}, {"GET", tag + ":new"}}).back(), "there");
  EXPECT_TRUE(redis_command(from, {"EXISTS", tag + ":new"}).starts_with("ERR:ASK "));
  EXPECT_EQ(call({"GET", tag + ":new"}).str, "there");
  EXPECT_EQ(c.metrics().asked, 2u);
  EXPECT_EQ(c.metrics().moved, 0u) << "ASK leaves the map alone";
  ASSERT_TRUE(group_->finish_moving(slot, from, to));
  EXPECT_EQ(call({"GET", tag + ":old"}).str, "here");
}

TEST_F(RedisClusterTest, ASlotNoNodeServesIsRetriedWithinTheWindowThenFailed) {
  RedisCluster& c = start(milliseconds(1500));
  const int owner = group_->primary_ports()[0];
  const std::string key = key_on(owner, 3);
  const std::string slot = std::to_string(redis_key_slot(key));
  for (std::size_t i = 0; i < group_->size(); ++i) {
    if (group_->node(i).running())
      redis_command(group_->node(i).port(), {"CLUSTER", "DELSLOTS", slot});
  }
  // The node answers CLUSTERDOWN, the refreshed map has no node for the slot: both retried
  // (20 ms doubling to 500 ms) until the 1.5 s window would pass, then the error.
  const RedisValue failed = call({"SET", key, "x"});
  ASSERT_TRUE(failed.is_error());
  EXPECT_NE(failed.str.find("CLUSTERDOWN"), std::string::npos) << failed.str;
  EXPECT_NE(failed.str.find("gave up after"), std::string::npos) << failed.str;
  EXPECT_GE(c.metrics().retries, 3u);
  EXPECT_EQ(c.metrics().gave_up, 1u);
  // Served again while a command waits: it goes through.
  std::optional<RedisValue> reply;
  c.command({"SET", key, "y"}, [&](const RedisValue& v) { reply = v; });
  redis_command(owner, {"CLUSTER", "ADDSLOTS", slot});
  ASSERT_TRUE(run_until([&] { return reply.has_value(); }));
  EXPECT_EQ(reply->str, "OK") << reply->str;
  EXPECT_EQ(redis_command(owner, {"GET", key}), "y");
  EXPECT_TRUE(group_->ready()) << "the slot is not served everywhere again";
}

// Whether the replica of the primary on `port` has every write the primary made so far: its
// offset (INFO replication's slave0 ... offset=N) at the primary's master_repl_offset.
bool replica_caught_up(int port) {
  const std::string info = redis_command(port, {"INFO", "replication"});
  auto number_after = [&](const std::string& label) -> long long {
    const std::size_t at = info.find(label);
    return at == std::string::npos ? -1 : std::atoll(info.c_str() + at + label.size());
  };
  const long long primary = number_after("master_repl_offset:");
  const std::size_t replica = info.find("slave0:");
  if (primary <= 0 || replica == std::string::npos) return false;
  const std::size_t offset = info.find("offset=", replica);
  return offset != std::string::npos && std::atoll(info.c_str() + offset + 7) >= primary;
}

// Last: it kills a primary of the suite's cluster.
TEST_F(RedisClusterTest, ASigkilledPrimaryIsFollowedToThePromotedReplica) {
  RedisCluster& c = start(milliseconds(20000));
  const int victim = group_->primary_ports()[2];
  const std::string key = key_on(victim, 4);
  const int slot = redis_key_slot(key);
  ASSERT_EQ(call({"SET", key, "kept"}).str, "OK");
  // The replica has it before the kill (replication is asynchronous). Not WAIT on a connection
  // of its own: WAIT counts the replicas that have that connection's writes, and it made none.
  ASSERT_TRUE(wheel_test::wait_until([&] { return replica_caught_up(victim); },
                                     std::chrono::seconds(20), milliseconds(20)))
      << redis_command(victim, {"INFO", "replication"});
  group_->node_on(victim).kill();
  // Once the client saw the connection close (a command in flight then fails: its effect is
  // unknown), a command waits (retries) until the cluster promotes the replica.
  RedisClient* old = c.client_at({"127.0.0.1", static_cast<std::uint16_t>(victim)});
  ASSERT_TRUE(run_until([&] { return !old->connected(); }));
  // The promotion takes about the node timeout (1 s) plus an election; the window is 20 s.
  const RedisValue reply = call({"GET", key});
  EXPECT_EQ(reply.str, "kept") << reply.str;
  const int promoted = group_->wait_for_new_primary(slot, victim, std::chrono::seconds(30));
  ASSERT_NE(promoted, 0) << "the cluster promoted no replica";
  EXPECT_EQ(call({"SET", key, "new"}).str, "OK");
  EXPECT_EQ(redis_command(promoted, {"GET", key}), "new");
  EXPECT_GE(c.metrics().retries, 1u);
  EXPECT_EQ(c.metrics().gave_up, 0u);
}

}  // namespace
}  // namespace wheel::jobs
