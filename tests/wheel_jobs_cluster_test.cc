// SPDX-License-Identifier: Apache-2.0
// wheel-jobs and Redis Cluster (a real one, tests/support/redis_cluster.h): a redis:// store that
// is a cluster node is refused at start-up with one clear line and exit 1, like any store that
// cannot serve; redis-cluster:// is checked as a URL, then refused (exit 2) until the store runs
// its tubes on a cluster.
#include <gtest/gtest.h>

#include <string>

#include "support/child_process.h"
#include "support/redis_cluster.h"

namespace {

class WheelJobsCluster : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cluster_ = new wheel_test::RedisClusterGroup({.primaries = 3, .replicas_each = 0});
    ASSERT_TRUE(cluster_->ready()) << "the cluster did not come up";
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  static wheel_test::RedisClusterGroup* cluster_;
};
wheel_test::RedisClusterGroup* WheelJobsCluster::cluster_ = nullptr;

TEST_F(WheelJobsCluster, ARedisUrlAtAClusterNodeIsRefusedBeforeListening) {
  const std::string url = "redis://127.0.0.1:" + std::to_string(cluster_->node(0).port());
  auto [status, out] =
      wheel_test::run_to_exit("timeout 60 " WHEEL_JOBS_PATH, "--store " + url + " --port 0");
  EXPECT_EQ(status, 1) << out;
  EXPECT_NE(out.find("the store at " + url +
                     "/0: this is a Redis Cluster node: use "
                     "redis-cluster://"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("listening on"), std::string::npos) << out;
}

TEST_F(WheelJobsCluster, WithoutWaitingForTheStoreTheFirstAnswerStillEndsTheNode) {
  const std::string url = "redis://127.0.0.1:" + std::to_string(cluster_->node(1).port());
  auto [status, out] = wheel_test::run_to_exit(
      "timeout 60 " WHEEL_JOBS_PATH, "--store " + url + " --port 0 --store-connect-timeout 0");
  EXPECT_EQ(status, 1) << out;
  EXPECT_NE(out.find("this is a Redis Cluster node: use redis-cluster://"), std::string::npos)
      << out;
}

TEST_F(WheelJobsCluster, AStandaloneRedisIsNotRefused) {
  wheel_test::RedisServer redis;
  ASSERT_TRUE(redis.running());
  wheel_test::ServerProcess node({WHEEL_JOBS_PATH, "--store", redis.url(), "--port", "0"});
  EXPECT_GT(node.port(), 0) << "a standalone Redis was refused";
}

TEST_F(WheelJobsCluster, AClusterUrlIsCheckedThenRefusedUntilTheStoreRunsOnACluster) {
  auto [status, out] = wheel_test::run_to_exit(
      WHEEL_JOBS_PATH, "--store 'redis-cluster://:s3cret@127.0.0.1:7000/1' --port 0");
  EXPECT_EQ(status, 2) << out;
  EXPECT_NE(out.find("--store: a Redis Cluster has database 0 only"), std::string::npos) << out;
  EXPECT_EQ(out.find("s3cret"), std::string::npos) << out;
  std::tie(status, out) =
      wheel_test::run_to_exit(WHEEL_JOBS_PATH, "--store " + cluster_->url(2) + " --port 0");
  EXPECT_EQ(status, 2) << out;
  EXPECT_NE(out.find("--store: redis-cluster:// is not supported by the store yet"),
            std::string::npos)
      << out;
}

}  // namespace
