// SPDX-License-Identifier: Apache-2.0
// redis-sentinel:// URLs (redis_endpoint.h): Lettuce's form, the sentinels' default port
// 26379, the data nodes' login and database, the primary's name after '#'; refusals that say
// what is wrong and never show the password.
#include <gtest/gtest.h>

#include <string>

#include "wheel/redis/redis_endpoint.h"

namespace wheel::jobs {
namespace {

TEST(RedisSentinelUrl, ParsesSentinelsWithTheirDefaultPortTheDatabaseAndTheMaster) {
  std::string error;
  auto e = parse_redis_sentinel_url("redis-sentinel://s1,s2:26400,[::1]/3#mymaster", &error);
  ASSERT_TRUE(e) << error;
  ASSERT_EQ(e->sentinels.size(), 3u);
  EXPECT_EQ(e->sentinels[0], (RedisAddress{"s1", 26379}));
  EXPECT_EQ(e->sentinels[1], (RedisAddress{"s2", 26400}));
  EXPECT_EQ(e->sentinels[2], (RedisAddress{"::1", 26379}));
  EXPECT_EQ(e->master, "mymaster");
  EXPECT_EQ(e->primary.db, 3u);
  EXPECT_EQ(e->primary.password, "");
  EXPECT_EQ(e->sentinel_password, "");
  EXPECT_EQ(format_redis_sentinel_url(*e),
            "redis-sentinel://s1:26379,s2:26400,[::1]:26379/3#mymaster");
  e = parse_redis_sentinel_url("redis-sentinel://127.0.0.1:5000#m");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->sentinels, (std::vector<RedisAddress>{{"127.0.0.1", 5000}}));
  EXPECT_EQ(e->primary.db, 0u);
}

TEST(RedisSentinelUrl, TheCredentialsAreTheDataNodesPercentDecodedAndNeverShown) {
  auto e = parse_redis_sentinel_url("redis-sentinel://app:p%40ss@s1,s2#m");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->primary.username, "app");
  EXPECT_EQ(e->primary.password, "p@ss");
  EXPECT_EQ(e->sentinels.size(), 2u);
  EXPECT_EQ(format_redis_sentinel_url(*e), "redis-sentinel://app@s1:26379,s2:26379/0#m");
  e = parse_redis_sentinel_url("redis-sentinel://:a@b#c@s1#m");  // '@' and '#' in the password
  ASSERT_TRUE(e);
  EXPECT_EQ(e->primary.password, "a@b#c");
  EXPECT_EQ(e->master, "m");
}

TEST(RedisSentinelUrl, RefusesMalformedUrlsSayingWhyWithoutThePassword) {
  std::string error;
  for (const char* bad : {"redis-sentinel://:s3cret@s1", "redis-sentinel://:s3cret@s1#",
                          "redis-sentinel://:s3cret@#m", "redis-sentinel://:s3cret@s1,#m",
                          "redis-sentinel://:s3cret@s1:0#m", "redis-sentinel://:s3cret@s1/x#m",
                          "redis-sentinel://:s3cret@s1?x=1#m", "redis-sentinel://:s3cret@s1#m m",
                          "redis://:s3cret@s1#m", "redis-sentinel://app@s1#m"}) {
    error.clear();
    EXPECT_FALSE(parse_redis_sentinel_url(bad, &error)) << bad;
    EXPECT_FALSE(error.empty()) << bad;
    EXPECT_EQ(error.find("s3cret"), std::string::npos) << error;
  }
  parse_redis_sentinel_url("redis-sentinel://:s3cret@s1", &error);
  EXPECT_NE(error.find("#MASTER"), std::string::npos) << error;
  EXPECT_NE(error.find("redis-sentinel://:***@s1"), std::string::npos) << error;
  parse_redis_sentinel_url("redis-sentinel://s1:70000#m", &error);
  EXPECT_EQ(error, "port must be a whole number from 1 to 65535, got '70000'");
  parse_redis_sentinel_url("redis-sentinel://s1/1000001#m", &error);
  EXPECT_NE(error.find("from 0 to 1000000"), std::string::npos) << error;
  std::string many = "redis-sentinel://s0";
  for (std::size_t i = 1; i <= kMaxSentinels; ++i) many += ",s" + std::to_string(i);
  EXPECT_FALSE(parse_redis_sentinel_url(many + "#m", &error));
  EXPECT_NE(error.find("at most 64 sentinels"), std::string::npos) << error;
  EXPECT_FALSE(parse_redis_sentinel_url(
      "redis-sentinel://s1#" + std::string(kMaxMasterName + 1, 'm'), &error));
  EXPECT_TRUE(parse_redis_sentinel_url("redis-sentinel://s1#" + std::string(kMaxMasterName, 'm')));
}

TEST(RedisSentinelUrl, ARedisUrlNamesTheSentinelSchemeWhenRefused) {
  std::string error;
  EXPECT_FALSE(parse_redis_url("sentinel://h", &error));
  EXPECT_NE(error.find("redis-sentinel://"), std::string::npos) << error;
}

}  // namespace
}  // namespace wheel::jobs
