// SPDX-License-Identifier: Apache-2.0
// RedisSentinel and a RedisClient that follows a primary (set_locator), on real Debian
// redis-server and redis-sentinel processes (tests/support/redis_sentinel.h): the sentinels are
// asked in turn, a sentinel's own password is sent to it, a located server that is not a primary
// (ROLE) is left, a READONLY reply makes the client ask again, and a SIGKILLed primary is
// followed to the replica Sentinel promotes, the subscription with it. Waits are bounded (seconds).
#include <gtest/gtest.h>
#include <uv.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "support/redis_sentinel.h"
#include "support/redis_server.h"
#include "wheel/redis/redis_client.h"
#include "wheel/redis/redis_sentinel.h"

namespace wheel::jobs {
namespace {

using std::chrono::milliseconds;
using wheel_test::Clock;
using wheel_test::redis_command;

RedisClientOptions client_options() {
  RedisClientOptions o;
  o.command_timeout = milliseconds(2000);
  o.min_backoff = milliseconds(20);
  o.max_backoff = milliseconds(500);
  return o;
}

class RedisSentinelTest : public ::testing::Test {
 protected:
  void SetUp() override { uv_loop_init(&loop_); }
  void TearDown() override {
    for (RedisClient* c : stop_) c->stop();
    if (sentinel_) sentinel_->stop();
    uv_run(&loop_, UV_RUN_DEFAULT);
    clients_.clear();
    sentinel_.reset();
    uv_loop_close(&loop_);
  }

  // Runs the loop until `done()` (at most `bound`); whether it came.
  template <class F>
  bool run_until(F done, std::chrono::seconds bound = std::chrono::seconds(10)) {
    const auto deadline = Clock::now() + bound;
    while (!done() && Clock::now() < deadline) {
      uv_run(&loop_, UV_RUN_NOWAIT);
      std::this_thread::sleep_for(milliseconds(1));
    }
    return done();
  }
  RedisValue call(RedisClient& c, std::vector<std::string> args) {
    std::optional<RedisValue> reply;
    c.command(args, [&](const RedisValue& v) { reply = v; });
    EXPECT_TRUE(run_until([&] { return reply.has_value(); })) << "no reply in 10 s";
    return reply.value_or(RedisValue::error("no reply"));
  }
  // `args` sent until Redis answers them without an error, at most `bound`.
  RedisValue call_until_ok(RedisClient& c, std::vector<std::string> args,
                           std::chrono::seconds bound = std::chrono::seconds(20)) {
    const auto deadline = Clock::now() + bound;
    RedisValue v = call(c, args);
    while (v.is_error() && Clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(20));
      v = call(c, args);
    }
    return v;
  }
  RedisSentinel& sentinel(RedisSentinelEndpoint endpoint) {
    RedisSentinelOptions o;
    o.endpoint = std::move(endpoint);
    o.command_timeout = milliseconds(1000);
    sentinel_.emplace(&loop_, o);
    sentinel_->start();
    return *sentinel_;
  }
  RedisClient& client(RedisClientOptions o = client_options()) {
    clients_.push_back(std::make_unique<RedisClient>(&loop_, o));
    stop_.push_back(clients_.back().get());
    return *clients_.back();
  }
  std::optional<RedisAddress> locate(RedisSentinel& s, std::string* error = nullptr) {
    bool done = false;
    std::optional<RedisAddress> found;
    s.locate([&](std::optional<RedisAddress> a, std::string why) {
      found = std::move(a);
      if (error != nullptr) *error = why;
      done = true;
    });
    EXPECT_TRUE(run_until([&] { return done; }));
    return found;
  }
  static RedisSentinelEndpoint endpoint_of(const std::string& url) {
    std::string error;
    auto e = parse_redis_sentinel_url(url, &error);
    EXPECT_TRUE(e) << error;
    return e.value_or(RedisSentinelEndpoint{});
  }

  uv_loop_t loop_{};
  std::optional<RedisSentinel> sentinel_;
  std::vector<std::unique_ptr<RedisClient>> clients_;
  std::vector<RedisClient*> stop_;
};

TEST_F(RedisSentinelTest, AsksTheSentinelsInTurnPassingOverOneThatIsDown) {
  wheel_test::SentinelGroup group(1);
  ASSERT_TRUE(group.ready());
  const int dead = wheel_test::free_port();  // nothing listens there
  RedisSentinelEndpoint e = endpoint_of(group.url());
  e.sentinels.insert(e.sentinels.begin(),
                     RedisAddress{"127.0.0.1", static_cast<std::uint16_t>(dead)});
  RedisSentinel& s = sentinel(e);
  std::string error;
  const auto primary = locate(s, &error);
  ASSERT_TRUE(primary) << error;
  EXPECT_EQ(*primary,
            (RedisAddress{"127.0.0.1", static_cast<std::uint16_t>(group.primary().port())}));
  EXPECT_GE(s.metrics().ask_failures, 1u);
  // A name no sentinel knows: each is asked once, and the reason says so.
  e.master = "nobody";
  RedisSentinel& unknown = sentinel(e);
  EXPECT_FALSE(locate(unknown, &error));
  EXPECT_NE(error.find("knows no primary named 'nobody'"), std::string::npos) << error;
  EXPECT_EQ(unknown.metrics().ask_failures, e.sentinels.size());
}

TEST_F(RedisSentinelTest, ASentinelWithItsOwnPasswordGetsIt) {
  wheel_test::RedisServer primary;
  wheel_test::SentinelSettings settings;
  settings.quorum = 1;
  settings.password = "sentinel-s3cret";
  wheel_test::RedisSentinelProcess watcher(primary.port(), settings);
  ASSERT_TRUE(watcher.running());
  RedisSentinelEndpoint e =
      endpoint_of("redis-sentinel://127.0.0.1:" + std::to_string(watcher.port()) + "#wheel");
  std::string error;
  EXPECT_FALSE(locate(sentinel(e), &error));
  EXPECT_NE(error.find("NOAUTH"), std::string::npos) << error;
  e.sentinel_password = settings.password;
  const auto found = locate(sentinel(e), &error);
  ASSERT_TRUE(found) << error;
  EXPECT_EQ(found->port, primary.port());
}

TEST_F(RedisSentinelTest, ALocatedServerThatIsNotThePrimaryIsLeftAfterRole) {
  wheel_test::RedisServer primary;
  wheel_test::RedisServer replica(
      {"--replicaof", "127.0.0.1", std::to_string(primary.port()), "--appendonly", "no"});
  // The locator names the replica first (a stale answer), then the primary.
  int asked = 0;
  RedisClient& c = client();
  c.set_locator(
      [&](const RedisClient::Locate& answer) {
        const int port = asked++ == 0 ? replica.port() : primary.port();
        answer(RedisAddress{"127.0.0.1", static_cast<std::uint16_t>(port)}, "");
      },
      true);
  c.start();
  const RedisValue v = call_until_ok(c, {"SET", "k", "v"});
  EXPECT_FALSE(v.is_error()) << v.str;
  EXPECT_EQ(c.endpoint().port, primary.port());
  EXPECT_GE(asked, 2);
  EXPECT_EQ(c.metrics().not_primary, 1u);
  EXPECT_EQ(c.metrics().errored(RedisErrorCause::kReadonly), 0u);
}

TEST_F(RedisSentinelTest, AReadonlyReplyMakesTheClientAskWhereThePrimaryIsNow) {
  // No AOF on `a`: as a replica it would write an initial AOF, during which SIGTERM is refused.
  wheel_test::RedisServer a({"--appendonly", "no"});
  wheel_test::RedisServer b;
  int primary = a.port();
  RedisClient& c = client();
  c.set_locator(
      [&](const RedisClient::Locate& answer) {
        answer(RedisAddress{"127.0.0.1", static_cast<std::uint16_t>(primary)}, "");
      },
      true);
  c.start();
  ASSERT_FALSE(call_until_ok(c, {"SET", "k", "1"}).is_error());
  // A failover nobody announced: a becomes b's replica, with our connection still open.
  ASSERT_EQ(redis_command(a.port(), {"REPLICAOF", "127.0.0.1", std::to_string(b.port())}), "OK");
  primary = b.port();
  const RedisValue refused = call(c, {"SET", "k", "2"});
  ASSERT_TRUE(refused.is_error());
  EXPECT_TRUE(refused.str.starts_with("READONLY")) << refused.str;
  EXPECT_EQ(c.metrics().errored(RedisErrorCause::kReadonly), 1u);
  const RedisValue v = call_until_ok(c, {"SET", "k", "3"}, std::chrono::seconds(10));
  EXPECT_FALSE(v.is_error()) << v.str;
  EXPECT_EQ(c.endpoint().port, b.port());
  EXPECT_EQ(c.metrics().relocations, 1u);
  EXPECT_EQ(redis_command(b.port(), {"GET", "k"}), "3");
}

// An announced primary (relocate with an address) is taken as told, even while the locator
// (a sentinel that has not learnt the switch yet) still names the old one.
TEST_F(RedisSentinelTest, ARelocationToAnAnnouncedPrimaryGoesThereDespiteAStaleLocator) {
  wheel_test::RedisServer old_primary;
  wheel_test::RedisServer announced;
  RedisClient& c = client();
  c.set_locator(
      [&](const RedisClient::Locate& answer) {
        answer(RedisAddress{"127.0.0.1", static_cast<std::uint16_t>(old_primary.port())}, "");
      },
      true);
  c.start();
  ASSERT_FALSE(call_until_ok(c, {"SET", "k", "old"}).is_error());
  c.relocate("announced", RedisAddress{"127.0.0.1", static_cast<std::uint16_t>(announced.port())});
  const RedisValue v = call_until_ok(c, {"SET", "k", "new"}, std::chrono::seconds(10));
  EXPECT_FALSE(v.is_error()) << v.str;
  EXPECT_EQ(c.endpoint().port, announced.port());
  EXPECT_EQ(redis_command(announced.port(), {"GET", "k"}), "new");
  EXPECT_EQ(redis_command(old_primary.port(), {"GET", "k"}), "old");
  // Told again where it already is: nothing happens.
  c.relocate("announced again",
             RedisAddress{"127.0.0.1", static_cast<std::uint16_t>(announced.port())});
  EXPECT_EQ(c.metrics().relocations, 1u);
}

// 1 primary, 1 replica, 3 sentinels: the primary is SIGKILLed while a client writes; the client
// and a subscriber both end up on the promoted replica, told by Sentinel (+switch-master).
TEST_F(RedisSentinelTest, ClientsFollowTheReplicaSentinelPromotesAfterThePrimaryIsKilled) {
  wheel_test::SentinelGroup group(1);
  ASSERT_TRUE(group.ready());
  RedisSentinel& s = sentinel(endpoint_of(group.url()));
  // A minute between attempts after a loss: only Sentinel's announcement moves them in time.
  RedisClientOptions slow = client_options();
  slow.min_backoff = slow.max_backoff = std::chrono::seconds(60);
  RedisClient& writer = client(slow);
  RedisClient& events = client(slow);
  s.follow(writer);
  s.follow(events);
  writer.start();
  events.start();
  int messages = 0;
  events.subscribe("ch", [&](std::string_view) { ++messages; });
  ASSERT_FALSE(call_until_ok(writer, {"SET", "before", "1"}).is_error());
  EXPECT_EQ(call(writer, {"WAIT", "1", "5000"}).integer, 1);  // on the replica too
  ASSERT_TRUE(run_until([&] { return events.connected(); }));
  const int old_port = group.primary().port();
  // Writes keep going while the primary dies.
  int written = 0;
  for (int i = 0; i < 20; ++i) written += call(writer, {"INCR", "n"}).is_error() ? 0 : 1;
  group.primary().kill();
  const int promoted = group.wait_for_new_primary(old_port, std::chrono::seconds(30));
  ASSERT_EQ(promoted, group.replica(0).port());
  const RedisValue after = call_until_ok(writer, {"INCR", "n"}, std::chrono::seconds(20));
  EXPECT_FALSE(after.is_error()) << after.str;
  EXPECT_EQ(writer.endpoint().port, promoted);
  ASSERT_TRUE(run_until([&] { return events.connected() && events.endpoint().port == promoted; },
                        std::chrono::seconds(20)));
  EXPECT_EQ(writer.metrics().relocations, 1u);
  EXPECT_EQ(s.metrics().switches, 1u);
  // The subscription moved too: a message published on the new primary arrives.
  ASSERT_TRUE(run_until(
      [&] {
        redis_command(promoted, {"PUBLISH", "ch", "x"});
        uv_run(&loop_, UV_RUN_NOWAIT);
        return messages > 0;
      },
      std::chrono::seconds(10)));
  EXPECT_EQ(redis_command(promoted, {"GET", "before"}), "1");
  (void)written;
}

}  // namespace
}  // namespace wheel::jobs
