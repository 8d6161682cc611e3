// SPDX-License-Identifier: Apache-2.0
// wheel-jobs-load redis-deliver's logic (wheel/load/redis_deliver.h) on a real redis-server:
// the chains reserve and delete exactly the jobs of their tube through RedisStore, stop at the
// count, and stop at the timeout when fewer are there.
#include "wheel/load/redis_deliver.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/redis_store_fixture.h"

namespace wheel::jobs {
namespace {

class RedisDeliverTest : public RedisStoreTest {
 protected:
  load::RedisDeliverConfig config(std::string tube, std::uint64_t count) {
    load::RedisDeliverConfig c;
    c.url = "redis://127.0.0.1:" + std::to_string(redis_.port());
    c.prefix = "t:";
    c.tube = std::move(tube);
    c.count = count;
    c.concurrency = 7;
    c.timeout = std::chrono::seconds(30);
    return c;
  }
  void put_ready(const std::string& tube, int n) {
    for (int i = 0; i < n; ++i) {
      ASSERT_EQ(put(tube, 0, milliseconds(0), milliseconds(60'000), "b" + std::to_string(i)).status,
                StoreStatus::kOk);
    }
  }
};

TEST_F(RedisDeliverTest, DeliversEveryJobOfItsTubeAndStopsAtTheCount) {
  put_ready("q", 300);
  put_ready("other", 5);
  const load::RedisDeliverResult r = load::run_redis_deliver(config("q", 300));
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.delivered, 300u);
  EXPECT_EQ(r.lost_deletes, 0u);
  EXPECT_EQ(r.failures, 0u);
  EXPECT_GT(r.secs, 0);
  // deleted, not only reserved: the store drops a tube once its deletes equal its puts
  EXPECT_EQ(tube("q").status, StoreStatus::kNotFound);
  EXPECT_EQ(tube("other").stats.ready, 5u);  // the other tube is untouched
}

TEST_F(RedisDeliverTest, TakesNoMoreThanItsCount) {
  put_ready("q", 40);
  const load::RedisDeliverResult r = load::run_redis_deliver(config("q", 25));
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.delivered, 25u);
  const TubeInfo q = tube("q");
  EXPECT_EQ(q.stats.ready, 15u);  // none reserved and left behind
  EXPECT_EQ(q.stats.reserved, 0u);
}

TEST_F(RedisDeliverTest, EndsAtTheTimeoutWithWhatThereWas) {
  put_ready("q", 10);
  load::RedisDeliverConfig c = config("q", 1000);
  // Long enough for the connect and 10 deliveries on a loaded machine (500 ms was not sure).
  c.timeout = milliseconds(5000);
  const load::RedisDeliverResult r = load::run_redis_deliver(c);
  EXPECT_FALSE(r.complete);
  EXPECT_EQ(r.delivered, 10u);
  EXPECT_GT(r.empty_reserves, 0u);
}

TEST_F(RedisDeliverTest, ReportsProgressEverySecondOfTheRun) {
  put_ready("q", 10);
  load::RedisDeliverConfig c = config("q", 1000);
  // libuv runs due timers in the order of their due times, so the ticks at 1 s and 2 s come
  // before the deadline however late the loop runs; 5 s also leaves a loaded machine the time
  // for the connect and the 10 deliveries.
  c.timeout = milliseconds(5000);
  std::vector<std::string> lines;
  c.progress = [&](const std::string& line) { lines.push_back(line); };
  const load::RedisDeliverResult r = load::run_redis_deliver(c);
  EXPECT_EQ(r.delivered, 10u);
  ASSERT_GE(lines.size(), 2u);
  unsigned long long before = 0;
  for (const std::string& line : lines) {
    if (line.rfind("waiting for Redis", 0) == 0) continue;  // not connected yet
    double secs = 0;
    unsigned long long delivered = 0, per_second = 0, failures = 0;
    ASSERT_EQ(std::sscanf(line.c_str(), "deliver %lfs: %llu delivered (%llu/s), %llu failures",
                          &secs, &delivered, &per_second, &failures),
              4)
        << line;
    EXPECT_GE(delivered, before) << line;
    EXPECT_LE(delivered, 10u) << line;
    EXPECT_EQ(per_second, delivered - before) << line;
    EXPECT_EQ(failures, 0u) << line;
    before = delivered;
  }
}

// While it has no connection the progress says where it waits, without the URL's password.
TEST_F(RedisDeliverTest, ProgressWhileWaitingForRedisHidesThePassword) {
  load::RedisDeliverConfig c = config("q", 10);
  c.url = "redis://app:s3cret@127.0.0.1:1";  // nothing listens on port 1
  c.timeout = milliseconds(1500);
  std::vector<std::string> lines;
  c.progress = [&](const std::string& line) { lines.push_back(line); };
  const load::RedisDeliverResult r = load::run_redis_deliver(c);
  EXPECT_EQ(r.delivered, 0u);
  ASSERT_FALSE(lines.empty());  // the 1 s tick comes before the 1.5 s deadline
  for (const std::string& line : lines) {
    EXPECT_EQ(line.rfind("waiting for Redis at redis://app@127.0.0.1:1/0, ", 0), 0u) << line;
    EXPECT_EQ(line.find("s3cret"), std::string::npos) << line;
  }
}

TEST_F(RedisDeliverTest, RejectsABadUrlAndSettingsOutOfRange) {
  load::RedisDeliverConfig c = config("q", 1);
  c.url = "http://x";
  EXPECT_THROW(load::run_redis_deliver(c), std::invalid_argument);
  c = config("q", 0);
  EXPECT_THROW(load::run_redis_deliver(c), std::invalid_argument);
  c = config("q", 1);
  c.concurrency = 0;
  EXPECT_THROW(load::run_redis_deliver(c), std::invalid_argument);
}

TEST(RedisDeliverJson, ListsOnlyTheErrorsThatHappened) {
  load::RedisDeliverConfig c;
  c.count = 10;
  load::RedisDeliverResult r;
  r.delivered = 10;
  r.complete = true;
  r.secs = 0.5;
  nlohmann::json j = load::redis_deliver_json(c, r, 0.25);
  EXPECT_EQ(j["errors"], nlohmann::json::object());
  EXPECT_FALSE(j.contains("first_failure"));
  EXPECT_EQ(j["delivered_per_s"], 20.0);
  EXPECT_EQ(j["n"], 10u);
  EXPECT_EQ(j["cpu_secs"], 0.25);
  EXPECT_EQ(j["complete"], true);
  r.lost_deletes = 2;
  r.failures = 3;
  r.first_failure = "ERR redis unavailable";
  r.secs = 0;  // a run that never started
  j = load::redis_deliver_json(c, r, 0);
  EXPECT_EQ(j["errors"], (nlohmann::json{{"lost_deletes", 2}, {"failures", 3}}));
  EXPECT_EQ(j["first_failure"], "ERR redis unavailable");
  EXPECT_EQ(j["delivered_per_s"], 0.0);
}

}  // namespace
}  // namespace wheel::jobs
