// SPDX-License-Identifier: Apache-2.0
// redis-cluster:// URLs (redis_endpoint.h): seed nodes with the default port 6379, every node's
// login, database 0 only; refusals that say what is wrong and never show the password.
#include <gtest/gtest.h>

#include <string>

#include "wheel/redis/redis_endpoint.h"

namespace wheel::jobs {
namespace {

TEST(RedisClusterUrl, ParsesSeedNodesWithTheDefaultPort) {
  std::string error;
  auto e = parse_redis_cluster_url("redis-cluster://n1:7000,n2,[::1]:7002", &error);
  ASSERT_TRUE(e) << error;
  EXPECT_EQ(e->seeds, (std::vector<RedisAddress>{{"n1", 7000}, {"n2", 6379}, {"::1", 7002}}));
  EXPECT_EQ(e->node.db, 0u);
  EXPECT_EQ(e->node.password, "");
  EXPECT_EQ(format_redis_cluster_url(*e), "redis-cluster://n1:7000,n2:6379,[::1]:7002");
  e = parse_redis_cluster_url("redis-cluster://127.0.0.1:30001");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->seeds, (std::vector<RedisAddress>{{"127.0.0.1", 30001}}));
}

TEST(RedisClusterUrl, TheCredentialsAreEveryNodesPercentDecodedAndNeverShown) {
  auto e = parse_redis_cluster_url("redis-cluster://app:p%40ss@n1:7000,n2:7001");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->node.username, "app");
  EXPECT_EQ(e->node.password, "p@ss");
  EXPECT_EQ(format_redis_cluster_url(*e), "redis-cluster://app@n1:7000,n2:7001");
  e = parse_redis_cluster_url("redis-cluster://:a@b,c@n1:7000");  // '@' and ',' in the password
  ASSERT_TRUE(e);
  EXPECT_EQ(e->node.username, "");
  EXPECT_EQ(e->node.password, "a@b,c");
  EXPECT_EQ(e->seeds.size(), 1u);
}

TEST(RedisClusterUrl, RefusesMalformedUrlsSayingWhyWithoutThePassword) {
  std::string error;
  for (const char* bad :
       {"redis-cluster://:s3cret@", "redis-cluster://:s3cret@n1:0",
        "redis-cluster://:s3cret@n1:65536", "redis-cluster://:s3cret@n1:7000,",
        "redis-cluster://:s3cret@n1:7000/0", "redis-cluster://:s3cret@n1?x=1",
        "redis-cluster://:s3cret@n1#m", "redis://:s3cret@n1", "redis-cluster://app@n1",
        "redis-cluster://:s3cret@[::1", "redis-cluster://:s3cret@n1:x"}) {
    error.clear();
    EXPECT_FALSE(parse_redis_cluster_url(bad, &error)) << bad;
    EXPECT_FALSE(error.empty()) << bad;
    EXPECT_EQ(error.find("s3cret"), std::string::npos) << error;
  }
  parse_redis_cluster_url("redis-cluster://:s3cret@n1:7000/0", &error);
  EXPECT_NE(error.find("database 0 only"), std::string::npos) << error;
  parse_redis_cluster_url("redis-cluster://n1:65536", &error);
  EXPECT_EQ(error, "port must be a whole number from 1 to 65535, got '65536'");
  parse_redis_cluster_url("redis-cluster://n1:7000,,n2", &error);
  EXPECT_NE(error.find("no host"), std::string::npos) << error;
}

TEST(RedisClusterUrl, RefusesMoreSeedsThanTheBound) {
  std::string url = "redis-cluster://";
  for (std::size_t i = 0; i <= kMaxClusterSeeds; ++i) url += (i ? ",n" : "n") + std::to_string(i);
  std::string error;
  EXPECT_FALSE(parse_redis_cluster_url(url, &error));
  EXPECT_NE(error.find("at most 64 seed nodes"), std::string::npos) << error;
  url = url.substr(0, url.rfind(','));
  EXPECT_TRUE(parse_redis_cluster_url(url, &error)) << error;
}

}  // namespace
}  // namespace wheel::jobs
