// SPDX-License-Identifier: Apache-2.0
// wheel-jobs and Redis Cluster (a real one, tests/support/redis_cluster.h): a redis:// store that
// is a cluster node is refused at start-up with one clear line and exit 1, like any store that
// cannot serve; redis-cluster:// runs the store over S hash-tag shards (redis_shards.h): one
// tube's jobs on every primary, each id on its shard, reserve fair over the shards, stats exact,
// a slot moved under it followed, the shard count kept for the fleet's life.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "support/beanstalk_client.h"
#include "support/child_process.h"
#include "support/redis_cluster.h"
#include "wheel/jobs/fleet/redis_shards.h"
#include "wheel/jobs/fleet/redis_store_results.h"
#include "wheel/redis/redis_cluster_slot.h"

namespace {

// The layout alone: each shard's hash tag in its slice of the slots, so S shards spread over
// the primaries as the slots do; one shard keeps the store's own prefix.
TEST(RedisShards, EachShardsTagLandsInItsSliceOfTheSlots) {
  EXPECT_EQ(wheel::jobs::redis_shard_prefixes("wj:", 1), std::vector<std::string>{"wj:"});
  for (std::uint32_t shards : {2u, 3u, 6u, 7u, 64u, 256u}) {
    const auto prefixes = wheel::jobs::redis_shard_prefixes("wj:", shards);
    ASSERT_EQ(prefixes.size(), shards);
    for (std::uint32_t s = 0; s < shards; ++s) {
      const std::uint32_t slot = wheel::jobs::redis_key_slot(prefixes[s] + "j");
      EXPECT_GE(slot, s * 16384 / shards) << prefixes[s];
      EXPECT_LT(slot, (s + 1) * 16384 / shards) << prefixes[s];
      EXPECT_EQ(wheel::jobs::redis_key_slot(prefixes[s] + "t:default:r"), slot) << prefixes[s];
    }
  }
  EXPECT_EQ(wheel::jobs::redis_default_shards(3), 6u);
  EXPECT_EQ(wheel::jobs::redis_default_shards(0), 2u);
  EXPECT_EQ(wheel::jobs::redis_default_shards(1000), wheel::jobs::kMaxRedisShards);
  EXPECT_EQ(wheel::jobs::redis_shard_of(13, 6), 1u);
}

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

TEST_F(WheelJobsCluster, AClusterUrlIsCheckedAndItsShardCountRangeChecked) {
  auto [status, out] = wheel_test::run_to_exit(
      WHEEL_JOBS_PATH, "--store 'redis-cluster://:s3cret@127.0.0.1:7000/1' --port 0");
  EXPECT_EQ(status, 2) << out;
  EXPECT_NE(out.find("--store: a Redis Cluster has database 0 only"), std::string::npos) << out;
  EXPECT_EQ(out.find("s3cret"), std::string::npos) << out;
  std::tie(status, out) = wheel_test::run_to_exit(
      WHEEL_JOBS_PATH, "--store " + cluster_->url(1) + " --store-shards 0 --port 0");
  EXPECT_EQ(status, 2) << out;
  EXPECT_NE(out.find("--store-shards"), std::string::npos) << out;
  EXPECT_NE(out.find("256"), std::string::npos) << out;
  std::tie(status, out) = wheel_test::run_to_exit(
      WHEEL_JOBS_PATH, "--store redis://127.0.0.1:1 --store-shards 4 --port 0");
  EXPECT_EQ(status, 2) << out;
  EXPECT_NE(out.find("--store-shards: needs --store redis-cluster://"), std::string::npos) << out;
}

// A wheel-jobs node on the cluster (fresh data, 6 shards: twice the 3 primaries).
class WheelJobsOnCluster : public WheelJobsCluster {
 protected:
  static constexpr int kShards = 6;
  void SetUp() override {
    for (int port : cluster_->primary_ports()) wheel_test::redis_command(port, {"FLUSHALL"});
    node_ = std::make_unique<wheel_test::ServerProcess>(
        std::vector<std::string>{WHEEL_JOBS_PATH, "--store", cluster_->url(1), "--port", "0"});
    ASSERT_GT(node_->port(), 0) << "wheel-jobs did not start on the cluster";
    client_ = std::make_unique<wheel_test::Client>(node_->port());
  }
  std::string put(const std::string& body, int priority = 100, int delay = 0) {
    client_->send("put " + std::to_string(priority) + " " + std::to_string(delay) + " 60 " +
                  std::to_string(body.size()) + "\r\n" + body + "\r\n");
    return client_->line();
  }
  static std::uint64_t id_of(const std::string& reply) {  // "INSERTED 7", "RESERVED 7 3"
    const auto space = reply.find(' ');
    return std::stoull(reply.substr(space + 1));
  }
  // The id of the job reserved (0: none), its body read.
  std::uint64_t reserve() {
    const std::string r = client_->ask(
        "reserve-with-timeout 0"
        "\r\n");
    if (r.rfind("RESERVED ", 0) != 0) return 0;
    const auto last = r.rfind(' ');
    client_->bytes(std::stoul(r.substr(last + 1)) + 2);
    return id_of(r);
  }
  static long field(const std::string& yaml, const std::string& name) {
    const auto at = yaml.find("\n" + name + ": ");
    return at == std::string::npos ? -1 : std::stol(yaml.substr(at + name.size() + 3));
  }
  // The primary serving shard `s`'s keys (its prefix "wj:{tag}:").
  static int primary_of_shard(std::uint32_t s) {
    return cluster_->primary_of(
        wheel::jobs::redis_key_slot(wheel::jobs::redis_shard_prefixes("wj:", kShards)[s] + "j"));
  }
  std::unique_ptr<wheel_test::ServerProcess> node_;
  std::unique_ptr<wheel_test::Client> client_;
};

TEST_F(WheelJobsOnCluster, PutReserveDeleteRoundTrip) {
  const std::string inserted = put("hello");
  ASSERT_EQ(inserted.rfind("INSERTED ", 0), 0u) << inserted;
  const std::uint64_t id = id_of(inserted);
  EXPECT_EQ(reserve(), id);
  EXPECT_EQ(client_->ask("delete " + std::to_string(id) + "\r\n"), "DELETED");
  EXPECT_EQ(reserve(), 0u);
  EXPECT_EQ(client_->ask("delete " + std::to_string(id) + "\r\n"), "NOT_FOUND");
}

TEST_F(WheelJobsOnCluster, OneTubesJobsLandOnEveryPrimaryAndEachIdOnItsShard) {
  std::vector<std::uint64_t> ids;
  for (int i = 0; i < 4 * kShards; ++i) ids.push_back(id_of(put("job " + std::to_string(i))));
  const auto prefixes = wheel::jobs::redis_shard_prefixes("wj:", kShards);
  std::map<int, int> per_primary;
  for (std::uint64_t id : ids) {
    // the id's shard (id % S) holds its record, on the primary serving that shard's slot
    const std::uint32_t s = wheel::jobs::redis_shard_of(id, kShards);
    const int port = primary_of_shard(s);
    EXPECT_EQ(wheel_test::redis_command(
                  port, {"HEXISTS", prefixes[s] + "j", wheel::jobs::redis_job_member(id)}),
              "1")
        << "job " << id << " is not on shard " << s;
    ++per_primary[port];
  }
  ASSERT_EQ(cluster_->primary_ports().size(), 3u);
  for (int port : cluster_->primary_ports()) {
    EXPECT_EQ(per_primary[port], 4 * kShards / 3) << "primary " << port;
    EXPECT_GT(std::stol(wheel_test::redis_command(port, {"DBSIZE"})), 0) << port;
    // the scripts were loaded on every primary: EVALSHA, not their whole text each time
    EXPECT_NE(wheel_test::redis_command(port, {"INFO", "commandstats"}).find("cmdstat_evalsha:"),
              std::string::npos)
        << port;
  }
  // Commands on one id find it on its shard.
  for (std::uint64_t id : ids) {
    EXPECT_EQ(client_->ask("kick-job " + std::to_string(id) + "\r\n"), "NOT_FOUND") << id;  // ready
    EXPECT_NE(client_->yaml("stats-job " + std::to_string(id) + "\r\n"), "") << id;
    EXPECT_EQ(client_->ask("delete " + std::to_string(id) + "\r\n"), "DELETED") << id;
  }
}

TEST_F(WheelJobsOnCluster, ReserveLooksAtEveryShardInTurnSoNoneStarves) {
  // Two jobs on every shard, all of one priority: the first S reserves take one of each shard.
  for (int i = 0; i < 2 * kShards; ++i) put("j");
  std::set<std::uint32_t> shards;
  for (int i = 0; i < kShards; ++i) {
    const std::uint64_t id = reserve();
    ASSERT_NE(id, 0u);
    shards.insert(wheel::jobs::redis_shard_of(id, kShards));
  }
  EXPECT_EQ(shards.size(), static_cast<std::size_t>(kShards));
  // An urgent job behind S - 1 less urgent ones on each other shard comes within S reserves.
  for (int i = 0; i < kShards - 1; ++i) put("lazy", 1000);
  const std::uint64_t urgent = id_of(put("urgent", 0));
  for (int i = 0; i < 2 * kShards; ++i) put("lazy", 1000);
  bool seen = false;
  for (int i = 0; i < kShards && !seen; ++i) seen = reserve() == urgent;
  EXPECT_TRUE(seen) << "the urgent job waited more than " << kShards << " reserves";
}

TEST_F(WheelJobsOnCluster, StatsCountEveryShardExactly) {
  std::vector<std::uint64_t> ids;
  for (int i = 0; i < 25; ++i) ids.push_back(id_of(put("r", i < 10 ? 5 : 2000)));
  for (int i = 0; i < 7; ++i) put("d", 100, 600);
  client_->ask(
      "use other"
      "\r\n");
  for (int i = 0; i < 3; ++i) put("o");
  ASSERT_EQ(client_->ask("watch other"
                         "\r\n"),
            "WATCHING 2");
  ASSERT_EQ(client_->ask("ignore default"
                         "\r\n"),
            "WATCHING 1");
  const std::uint64_t held = reserve();
  ASSERT_NE(held, 0u);
  EXPECT_EQ(client_->ask("bury " + std::to_string(held) +
                         " 1"
                         "\r\n"),
            "BURIED");
  const std::string tube = client_->yaml(
      "stats-tube default"
      "\r\n");
  EXPECT_EQ(field(tube, "total-jobs"), 32) << tube;
  EXPECT_EQ(field(tube, "current-jobs-ready"), 25) << tube;
  EXPECT_EQ(field(tube, "current-jobs-urgent"), 10) << tube;
  EXPECT_EQ(field(tube, "current-jobs-delayed"), 7) << tube;
  const std::string other = client_->yaml(
      "stats-tube other"
      "\r\n");
  EXPECT_EQ(field(other, "current-jobs-buried"), 1) << other;
  EXPECT_EQ(field(other, "current-jobs-ready"), 2) << other;
  const std::string all = client_->yaml(
      "stats"
      "\r\n");
  EXPECT_EQ(field(all, "total-jobs"), 35) << all;
  EXPECT_EQ(field(all, "current-jobs-ready"), 27) << all;
  EXPECT_EQ(field(all, "current-jobs-delayed"), 7) << all;
  EXPECT_EQ(field(all, "current-jobs-buried"), 1) << all;
  EXPECT_EQ(field(all, "current-tubes"), 2) << all;
  // kick goes shard after shard (the tube used is "other": its buried job)
  EXPECT_EQ(client_->ask("kick 10\r\n"), "KICKED 1");
  EXPECT_EQ(field(client_->yaml("stats-tube other\r\n"), "current-jobs-ready"), 3);
}

TEST_F(WheelJobsOnCluster, AShardsSlotMovedToAnotherPrimaryIsFollowed) {
  std::vector<std::uint64_t> ids;
  for (int i = 0; i < 2 * kShards; ++i) ids.push_back(id_of(put("before")));
  // Shard 0's slot, with its jobs, moves to another primary (MIGRATE, then SETSLOT NODE).
  const int slot =
      wheel::jobs::redis_key_slot(wheel::jobs::redis_shard_prefixes("wj:", kShards)[0] + "j");
  const int from = cluster_->primary_of(slot);
  int to = 0;
  for (int port : cluster_->primary_ports()) {
    if (port != from) to = port;
  }
  ASSERT_TRUE(cluster_->begin_moving(slot, from, to));
  ASSERT_TRUE(cluster_->finish_moving(slot, from, to));
  ASSERT_EQ(cluster_->primary_of(slot), to);
  for (int i = 0; i < 2 * kShards; ++i) ids.push_back(id_of(put("after")));
  std::set<std::uint64_t> reserved;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const std::uint64_t id = reserve();
    ASSERT_NE(id, 0u) << "after " << i << " reserves";
    reserved.insert(id);
    EXPECT_EQ(client_->ask("delete " + std::to_string(id) + "\r\n"), "DELETED") << id;
  }
  EXPECT_EQ(reserved, std::set<std::uint64_t>(ids.begin(), ids.end()));
}

TEST_F(WheelJobsOnCluster, TheShardCountIsKeptForTheFleetsLife) {
  put("x");
  // A second node with another count is refused: ids name their shard by the kept count.
  auto [status, out] = wheel_test::run_to_exit(
      "timeout 30 " WHEEL_JOBS_PATH, "--store " + cluster_->url(1) + " --store-shards 4 --port 0");
  EXPECT_EQ(status, 2) << out;
  EXPECT_NE(out.find("--store-shards: this fleet's jobs are kept in 6 shards"), std::string::npos)
      << out;
}

}  // namespace
