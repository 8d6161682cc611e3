// SPDX-License-Identifier: Apache-2.0
// Logging in to Redis (redis_endpoint.h, RedisClient): credentials in the URL, percent-decoded,
// never shown; on a real redis-server that requires a password (requirepass) or an ACL user,
// the store works with the right ones (AUTH before SELECT), and a refused login fails commands
// at once with Redis's reason instead of hanging, then recovers once the login is fixed.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "support/redis_store_fixture.h"
#include "support/timer_test_support.h"
#include "wheel/redis/redis_endpoint.h"

namespace wheel::jobs {
namespace {

using wheel_test::redis_command;

TEST(RedisEndpointCredentials, ParsesTheDefaultUserAndAnAclUserPercentDecoded) {
  auto e = parse_redis_url("redis://:s3cret@h:1/2");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->username, "");
  EXPECT_EQ(e->password, "s3cret");
  EXPECT_EQ(e->host, "h");
  EXPECT_EQ(e->port, 1);
  EXPECT_EQ(e->db, 2u);
  e = parse_redis_url("redis://app:p%40ss%2Fw%3a@[::1]:7000");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->username, "app");
  EXPECT_EQ(e->password, "p@ss/w:");
  EXPECT_EQ(e->host, "::1");
  // unescaped '@' and '/' in a password: the credentials end at the last '@'
  e = parse_redis_url("redis://:a@b/c@h:9");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->password, "a@b/c");
  EXPECT_EQ(e->host, "h");
  EXPECT_EQ(e->port, 9);
}

TEST(RedisEndpointCredentials, RefusesBadCredentialsWithoutShowingThePassword) {
  std::string error;
  for (const char* bad : {"redis://app@h", "redis://:@h", "redis://app:@h", "redis://:s3cret%4@h",
                          "redis://:s3cret%zz@h", "redis://:s3cret@h:0", "redis://:s3cret@",
                          "redis://:s3cret@h?db=1", "rediss://:s3cret@h"}) {
    error.clear();
    EXPECT_FALSE(parse_redis_url(bad, &error)) << bad;
    EXPECT_FALSE(error.empty()) << bad;
    EXPECT_EQ(error.find("s3cret"), std::string::npos) << error;
  }
  parse_redis_url("redis://app:s3cret@h:0", &error);
  EXPECT_EQ(error, "port must be a whole number from 1 to 65535, got '0'");
  parse_redis_url("redis://app:s3cret@h:1/x", &error);
  EXPECT_NE(error.find("'x'"), std::string::npos) << error;
  parse_redis_url("redis://app:s3cret%4@h", &error);
  EXPECT_NE(error.find("redis://app:***@h"), std::string::npos) << error;
  const std::string long_password(kMaxRedisCredential + 1, 'p');
  EXPECT_FALSE(parse_redis_url("redis://:" + long_password + "@h", &error));
  EXPECT_NE(error.find("1024"), std::string::npos) << error;
  EXPECT_TRUE(parse_redis_url("redis://:" + long_password.substr(1) + "@h"));
}

TEST(RedisEndpointCredentials, FormatShowsTheUserButNeverThePassword) {
  RedisEndpoint e{"h", 6380, 1, "app", "s3cret"};
  EXPECT_EQ(format_redis_url(e), "redis://app@h:6380/1");
  e.username.clear();
  EXPECT_EQ(format_redis_url(e), "redis://h:6380/1");
}

// A Redis that requires a login: the default user's password and an ACL user `app` limited to
// the store's keys, set over a connection made before requirepass (which stays logged in).
class RedisAuthTest : public RedisStoreTest {
 protected:
  void SetUp() override {
    RedisStoreTest::SetUp();
    ASSERT_EQ(redis_command(redis_.port(),
                            {"ACL", "SETUSER", "app", "on", ">app-pass", "~t:*", "&t:*", "+@all"}),
              "OK");
    ASSERT_EQ(redis_command(redis_.port(), {"CONFIG", "SET", "requirepass", "default-pass"}), "OK");
  }

  // The fixture's store, now on a client that logs in with these credentials.
  void reconnect(const std::string& username, const std::string& password, std::uint32_t db) {
    connect({"127.0.0.1", static_cast<std::uint16_t>(redis_.port()), db, username, password});
  }

  // The number of keys in `db`, asked as the default user.
  std::string keys_in(int db) { return redis_command_as_default(db, {"DBSIZE"}); }
  // One command's reply as text (redis_session), sent as the default user in database `db`.
  std::string redis_command_as_default(int db, const std::vector<std::string>& args) {
    const std::vector<std::string> replies = wheel_test::redis_session(
        redis_.port(), {{"AUTH", "default-pass"}, {"SELECT", std::to_string(db)}, args});
    if (replies[0] != "OK" || replies[1] != "OK") return "login failed: " + replies[0];
    return replies[2];
  }
};

TEST_F(RedisAuthTest, TheDefaultUsersPasswordLogsInBeforeTheDatabaseIsSelected) {
  reconnect("", "default-pass", 3);
  const InsertResult put_result = put("q", 0, milliseconds(0), milliseconds(60'000), "body");
  ASSERT_EQ(put_result.status, StoreStatus::kOk) << put_result.error;
  EXPECT_EQ(reserve({"q"}).id, put_result.id);
  // In database 3, not 0: a SELECT sent before AUTH would have been refused (NOAUTH).
  EXPECT_NE(keys_in(3), "0");
  EXPECT_EQ(keys_in(0), "0");
}

TEST_F(RedisAuthTest, AnAclUserLogsIn) {
  reconnect("app", "app-pass", 0);
  const InsertResult put_result = put("q", 0, milliseconds(0), milliseconds(60'000), "body");
  ASSERT_EQ(put_result.status, StoreStatus::kOk) << put_result.error;
  EXPECT_EQ(reserve({"q"}).id, put_result.id);
}

TEST_F(RedisAuthTest, ARefusedLoginFailsAtOnceWithRedissReasonThenRecoversOnceFixed) {
  reconnect("app", "wrong", 0);
  const InsertResult refused = put("q", 0, milliseconds(0), milliseconds(60'000), "body");
  EXPECT_EQ(refused.status, StoreStatus::kError);
  // Redis's own reason reaches the caller (not a timeout, not a bare NOAUTH of each command).
  EXPECT_NE(refused.error.find("AUTH refused"), std::string::npos) << refused.error;
  EXPECT_NE(refused.error.find("WRONGPASS"), std::string::npos) << refused.error;
  // It retries with a growing backoff (20 ms doubling to 200 ms here: 7 tries in a second, fewer
  // on a slow machine), not at the first step's pace after every connect (about 40).
  const auto second_later = Clock::now() + std::chrono::seconds(1);
  while (Clock::now() < second_later) uv_run(&loop_, UV_RUN_NOWAIT), nap();
  EXPECT_LE(client_->metrics().reconnects, 12u);
  // The operator sets the password the node was given: the client's retries get in.
  ASSERT_EQ(redis_command_as_default(0, {"ACL", "SETUSER", "app", ">wrong"}), "OK");
  const InsertResult later = put_once_back("q", "body");
  EXPECT_EQ(later.status, StoreStatus::kOk) << later.error;
}

TEST_F(RedisAuthTest, NoPasswordForARedisThatWantsOneFailsWithItsReason) {
  reconnect("", "", 0);
  const InsertResult refused = put("q", 0, milliseconds(0), milliseconds(60'000), "body");
  EXPECT_EQ(refused.status, StoreStatus::kError);
  EXPECT_NE(refused.error.find("NOAUTH"), std::string::npos) << refused.error;
}

// The operator sees why: Redis's refusal is logged once with its own words, not at every retry
// (the client retries about 7 times in that second), and counted each time.
TEST_F(RedisAuthTest, ARefusedLoginIsLoggedOnceAndCountedAtEveryTry) {
  ::wheel::testing::LogCapture log;
  reconnect("app", "wrong", 0);
  EXPECT_EQ(put("q", 0, milliseconds(0), milliseconds(60'000), "body").status, StoreStatus::kError);
  const auto second_later = Clock::now() + std::chrono::seconds(1);
  while (Clock::now() < second_later) uv_run(&loop_, UV_RUN_NOWAIT), nap();
  EXPECT_GE(client_->metrics().errored(RedisErrorCause::kWrongpass), 3u);
  EXPECT_EQ(log.count("WRONGPASS"), 1);
  EXPECT_EQ(log.count("[wrongpass]"), 1);
}

TEST_F(RedisAuthTest, NoPasswordIsLoggedOnceAsNoauth) {
  ::wheel::testing::LogCapture log;
  reconnect("", "", 0);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(put("q", 0, milliseconds(0), milliseconds(60'000), "body").status,
              StoreStatus::kError);
  }
  EXPECT_GE(client_->metrics().errored(RedisErrorCause::kNoauth), 3u);
  EXPECT_EQ(log.count("NOAUTH Authentication required."), 1);
  EXPECT_EQ(log.count("give it in the --store URL"), 1);  // the hint
}

}  // namespace
}  // namespace wheel::jobs
