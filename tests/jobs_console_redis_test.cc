// SPDX-License-Identifier: Apache-2.0
// wheel::jobs::console on the Redis store (RedisConsole) against a real redis-server: the same
// JSON API as on the local queue (jobs_console_test.cc), the fleet's tubes and jobs.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "support/redis_store_fixture.h"
#include "wheel/jobs/console/console_service.h"
#include "wheel/jobs/console/redis_console.h"
#include "wheel/jobs/fleet/redis_jobs_handler.h"

namespace wheel::jobs {
namespace {

using nlohmann::json;
constexpr const char* kToken = "0123456789abcdef0123456789abcdef";

class RedisConsoleTest : public RedisStoreTest {
 protected:
  void SetUp() override {
    RedisStoreTest::SetUp();
    events_.emplace(&loop_, test_options());
    handler_.emplace(*store_, *events_, RedisJobsOptions{});
    backend_.emplace(*store_, *handler_);
    console::ConsoleOptions o;
    o.token = kToken;
    o.clock = [this] { return clock_ms_; };
    service_.emplace(*backend_, o);
  }
  void TearDown() override {
    service_.reset();
    backend_.reset();
    handler_.reset();
    events_->stop();
    RedisStoreTest::TearDown();
  }
  json call(const std::string& method, const std::string& target, const std::string& body = {},
            int expect = 200) {
    server::HttpRequest r;
    r.method = method;
    const std::size_t q = target.find('?');
    r.raw_path = target.substr(0, q);
    if (q != std::string::npos) r.query = target.substr(q + 1);
    r.head = std::string("Content-Type: application/json\r\nX-Wheel-Token: ") + kToken + "\r\n";
    r.body = body;
    std::optional<server::HttpResponse> out;
    service_->handle(r, [&](server::HttpResponse response) { out = std::move(response); });
    const server::HttpResponse response = wait(out);
    EXPECT_EQ(response.status, expect) << target << ": " << response.body;
    return response.body.empty() ? json() : json::parse(response.body);
  }
  void bury_one(const std::string& tube) {
    const ClaimResult c = reserve({tube});
    ASSERT_EQ(c.status, StoreStatus::kOk);
    ASSERT_EQ(change([&](auto done) { store_->bury(c.id, c.token, 5, done); }).status,
              StoreStatus::kOk);
  }

  // A key of the test's store (prefix "t:"), and a job's member in its zsets.
  static std::string key(const std::string& tube, const char* kind) {
    return "t:t:" + tube + ":" + kind;
  }
  std::string redis(const std::vector<std::string>& args) {
    return wheel_test::redis_command(redis_.port(), args);
  }
  // When the store says job `id` of `tube` became ready ("": not among its ready jobs).
  std::string ready_at(const std::string& tube, std::uint64_t id) {
    return redis({"ZSCORE", key(tube, "a"), redis_job_member(id)});
  }

  std::int64_t clock_ms_ = 1'000'000;
  std::optional<RedisClient> events_;
  std::optional<RedisJobsHandler> handler_;
  std::optional<console::RedisConsole> backend_;
  std::optional<console::ConsoleService> service_;
};

TEST_F(RedisConsoleTest, OverviewAndTubeShowTheFleetsJobsByState) {
  put("mail", 9, milliseconds(0), milliseconds(1000), "late");
  const std::uint64_t first = put("mail", 1, milliseconds(0), milliseconds(1000), "first").id;
  put("mail", 1, milliseconds(60'000), milliseconds(1000), "later");
  put("sms", 1, milliseconds(0), milliseconds(1000), "<b>x</b>");
  bury_one("sms");
  const json o = call("GET", "/api/overview");
  EXPECT_EQ(o["backend"], "redis");
  ASSERT_EQ(o["tubes"].size(), 2u);
  EXPECT_EQ(o["tubes"][0]["name"], "mail");
  EXPECT_EQ(o["tubes"][0]["ready"], 2);
  EXPECT_EQ(o["tubes"][0]["delayed"], 1);
  EXPECT_EQ(o["tubes"][0]["puts"], 3);
  EXPECT_EQ(o["tubes"][0]["deliveries"], 0);
  EXPECT_EQ(o["tubes"][1]["buried"], 1);
  EXPECT_EQ(o["buried"], 1);
  const json t = call("GET", "/api/tubes/mail?preview=3");
  ASSERT_EQ(t["ready"].size(), 2u);
  EXPECT_EQ(t["ready"][0]["id"], first);
  EXPECT_EQ(t["ready"][0]["body"], "fir");
  EXPECT_EQ(t["ready"][0]["body_size"], 5);
  ASSERT_EQ(t["delayed"].size(), 1u);
  EXPECT_GT(t["delayed"][0]["time_left_ms"].get<std::int64_t>(), 50'000);
  EXPECT_EQ(call("GET", "/api/tubes/sms")["buried"][0]["body"], "<b>x</b>");
  call("GET", "/api/tubes/none", {}, 404);
}

TEST_F(RedisConsoleTest, SearchLooksAtNoMoreThanItsBoundAcrossStates) {
  for (int i = 0; i < 3; ++i) {
    put("t", 1, milliseconds(0), milliseconds(1000), "order-" + std::to_string(i));
    put("t", 1, milliseconds(60'000), milliseconds(1000), "order-delayed-" + std::to_string(i));
  }
  json s = call("GET", "/api/tubes/t/search?q=delayed-2");
  EXPECT_EQ(s["scanned"], 6);
  EXPECT_EQ(s["complete"], true);
  ASSERT_EQ(s["hits"].size(), 1u);
  EXPECT_EQ(s["hits"][0]["state"], "delayed");
  s = call("GET", "/api/tubes/t/search?q=order&scan=4");  // 3 ready, then 1 delayed
  EXPECT_EQ(s["scanned"], 4);
  EXPECT_EQ(s["hits"].size(), 4u);
  EXPECT_EQ(s["complete"], false);
}

TEST_F(RedisConsoleTest, ChangesGoToTheStore) {
  const std::uint64_t a = put("t", 1, milliseconds(0), milliseconds(1000), "body a").id;
  put("t", 1, milliseconds(0), milliseconds(1000), "body b");
  bury_one("t");
  bury_one("t");
  EXPECT_EQ(call("POST", "/api/tubes/t/kick", R"({"count": 1})")["kicked"], 1);
  EXPECT_EQ(tube("t").stats.buried, 1u);
  const json j = call("GET", "/api/jobs/" + std::to_string(a));
  EXPECT_EQ(j["body"], "body a");
  EXPECT_EQ(j["tube"], "t");
  call("POST", "/api/jobs/" + std::to_string(a) + "/delete");
  call("GET", "/api/jobs/" + std::to_string(a), {}, 404);
  call("POST", "/api/tubes/t/pause", R"({"seconds": 60})");
  EXPECT_EQ(call("GET", "/api/tubes/t")["tube"]["paused"], true);
  call("POST", "/api/tubes/t/pause", R"({"seconds": 0})");
  EXPECT_EQ(call("GET", "/api/tubes/t")["tube"]["paused"], false);
  const std::uint64_t id =
      call("POST", "/api/tubes/t/put", R"({"body": "new", "delay": 30})")["id"];
  EXPECT_EQ(job(id).stats.state, JobState::kDelayed);
  call("POST", "/api/jobs/" + std::to_string(id) + "/kick");
  EXPECT_EQ(job(id).stats.state, JobState::kReady);
}

TEST_F(RedisConsoleTest, DeliveriesAreCountedPerTubeAndMadeARate) {
  for (int i = 0; i < 3; ++i) put("mail", 1, milliseconds(0), milliseconds(60'000), "m");
  put("sms", 1, milliseconds(0), milliseconds(60'000), "s");
  json o = call("GET", "/api/overview");
  EXPECT_EQ(o["tubes"][0]["deliveries"], 0);
  EXPECT_TRUE(o["tubes"][0]["deliveries_per_second"].is_null());  // one poll only
  ASSERT_EQ(reserve({"mail"}).status, StoreStatus::kOk);
  ASSERT_EQ(reserve({"mail"}).status, StoreStatus::kOk);
  const std::uint64_t third = put("mail", 1, milliseconds(0), milliseconds(60'000), "m").id;
  std::optional<ClaimResult> claimed;
  store_->reserve_job(third, [&](ClaimResult&& c) { claimed = std::move(c); });
  ASSERT_EQ(wait(claimed).status, StoreStatus::kOk);  // reserve-job is a delivery too
  clock_ms_ += 2000;
  o = call("GET", "/api/overview");
  EXPECT_EQ(o["tubes"][0]["name"], "mail");
  EXPECT_EQ(o["tubes"][0]["deliveries"], 3);
  EXPECT_EQ(o["tubes"][0]["deliveries_per_second"], 1.5);  // 3 in the 2 s between the polls
  EXPECT_EQ(o["tubes"][1]["deliveries"], 0);
  EXPECT_EQ(o["tubes"][1]["deliveries_per_second"], 0.0);
}

TEST_F(RedisConsoleTest, DeliveriesGoOnCountingWhenATubeEmptiesAndFillsAgain) {
  for (int i = 0; i < 2; ++i) {
    put("t", 1, milliseconds(0), milliseconds(60'000), "x");
    const ClaimResult c = reserve({"t"});
    ASSERT_EQ(c.status, StoreStatus::kOk);
    ASSERT_EQ(change([&](auto done) { store_->remove(c.id, c.token, done); }).status,
              StoreStatus::kOk);
    EXPECT_EQ(tube("t").status, StoreStatus::kNotFound);      // empty: dropped
    EXPECT_GT(std::stoll(redis({"TTL", key("t", "n")})), 0);  // its count kept a while
  }
  put("t", 1, milliseconds(0), milliseconds(60'000), "x");
  EXPECT_EQ(redis({"TTL", key("t", "n")}), "-1");  // back: kept for good again
  EXPECT_EQ(call("GET", "/api/tubes/t")["tube"]["deliveries"], 2);
}

TEST_F(RedisConsoleTest, OldestReadyAgeIsTheLongestWaitingReadyJobsNotTheHeads) {
  const std::uint64_t old_one = put("t", 9, milliseconds(0), milliseconds(60'000), "old").id;
  put("t", 1, milliseconds(0), milliseconds(60'000), "urgent");  // the head: priority 1
  // As if the priority-9 job had been ready for a minute.
  const std::int64_t now = put("other", 1, milliseconds(0), milliseconds(1000), "x").now;
  redis({"ZADD", key("t", "a"), "XX", std::to_string(now - 60'000), redis_job_member(old_one)});
  const json t = call("GET", "/api/overview")["tubes"][0];
  ASSERT_EQ(t["name"], "t");
  EXPECT_GE(t["oldest_ready_ms"].get<std::int64_t>(), 60'000);
  EXPECT_LT(t["oldest_ready_ms"].get<std::int64_t>(), 120'000);
  EXPECT_LT(t["head_wait_ms"].get<std::int64_t>(), 60'000);
  put("d", 1, milliseconds(60'000), milliseconds(1000), "later");
  const json d = call("GET", "/api/tubes/d")["tube"];
  EXPECT_TRUE(d["oldest_ready_ms"].is_null());  // no ready job
  EXPECT_TRUE(d["head_wait_ms"].is_null());
}

TEST_F(RedisConsoleTest, ReadyTimesFollowEveryWayIntoAndOutOfReady) {
  // put: ready since the put
  const InsertResult a = put("t", 5, milliseconds(0), milliseconds(60'000), "a");
  EXPECT_EQ(ready_at("t", a.id), std::to_string(a.now));
  // a delay that ends: ready since it was due, not since a script noticed
  const std::uint64_t b = put("t", 5, milliseconds(5), milliseconds(60'000), "b").id;
  const std::string due = redis({"ZSCORE", key("t", "d"), "0000000005:" + redis_job_member(b)});
  ASSERT_FALSE(due.empty());
  std::this_thread::sleep_for(milliseconds(50));
  ASSERT_EQ(tube("t").stats.ready, 2u);  // promoted by the stats script
  EXPECT_EQ(ready_at("t", b), due);
  // reserve: out; release: ready again since the release
  const ClaimResult c = reserve({"t"});
  ASSERT_EQ(c.status, StoreStatus::kOk);
  EXPECT_EQ(ready_at("t", c.id), "");
  const ChangeResult released = change([&](auto done) {
    store_->release(c.id, c.token, std::nullopt, milliseconds(0), true, done);
  });
  ASSERT_EQ(released.status, StoreStatus::kOk);
  EXPECT_EQ(ready_at("t", c.id), std::to_string(released.now));
  // delete: out
  ASSERT_EQ(change([&](auto done) { store_->remove(a.id, 0, done); }).status, StoreStatus::kOk);
  EXPECT_EQ(ready_at("t", a.id), "");
  // bury, then kick: ready since the kick
  bury_one("t");
  EXPECT_EQ(redis({"ZCARD", key("t", "a")}), "0");
  const ChangeResult kicked = change([&](auto done) { store_->kick("t", 1, done); });
  ASSERT_EQ(kicked.value, 1);
  EXPECT_EQ(ready_at("t", b), std::to_string(kicked.now));
  EXPECT_EQ(redis({"ZCARD", key("t", "a")}), redis({"ZCARD", key("t", "r")}));
}

TEST_F(RedisConsoleTest, PagesWalkEveryStatePastTheFirstHundred) {
  std::vector<std::uint64_t> ready, buried;
  for (int i = 0; i < 150; ++i) {
    ready.push_back(put("t", 1, milliseconds(0), milliseconds(60'000), "r").id);
  }
  std::vector<std::uint64_t> seen;
  for (const char* offset : {"0", "100"}) {
    const json page = call("GET", std::string("/api/tubes/t?jobs=100&ready_offset=") + offset);
    for (const json& j : page["ready"]) seen.push_back(j["id"]);
  }
  EXPECT_EQ(seen, ready);
  for (int i = 0; i < 3; ++i) bury_one("t");
  const json v = call("GET", "/api/tubes/t?jobs=2&buried_offset=2&ready_offset=140");
  ASSERT_EQ(v["buried"].size(), 1u);  // the third buried
  EXPECT_EQ(v["buried"][0]["id"], ready[2]);
  EXPECT_EQ(v["ready"][0]["id"], ready[143]);  // 3 of them reserved and buried
  EXPECT_EQ(v["offsets"]["buried"], 2);
}

TEST_F(RedisConsoleTest, MoveReputsJobsIntoTheOtherTubeInOneScript) {
  const std::uint64_t r1 = put("a", 2, milliseconds(0), milliseconds(5000), "r1").id;
  put("a", 8, milliseconds(0), milliseconds(5000), "r2");
  const InsertResult d = put("a", 3, milliseconds(60'000), milliseconds(5000), "d");
  put("a", 4, milliseconds(0), milliseconds(5000), "b");
  EXPECT_EQ(call("POST", "/api/tubes/a/move", R"({"to": "z", "state": "ready"})")["moved"], 1);
  EXPECT_EQ(job(r1).status, StoreStatus::kNotFound);  // deleted: ids change
  json z = call("GET", "/api/tubes/z");
  ASSERT_EQ(z["ready"].size(), 1u);
  EXPECT_EQ(z["ready"][0]["body"], "r1");
  EXPECT_EQ(z["ready"][0]["priority"], 2);
  const std::uint64_t moved = z["ready"][0]["id"];
  EXPECT_EQ(job(moved).stats.ttr, milliseconds(5000));
  EXPECT_NE(ready_at("z", moved), "");  // ready since the move
  EXPECT_EQ(
      call("POST", "/api/tubes/a/move", R"({"to": "z", "state": "delayed", "count": 5})")["moved"],
      1);
  z = call("GET", "/api/tubes/z");
  ASSERT_EQ(z["delayed"].size(), 1u);
  const std::int64_t left = z["delayed"][0]["time_left_ms"];
  EXPECT_LE(left, 60'000);  // its due time kept, not a new full delay
  EXPECT_GT(left, 30'000);
  EXPECT_EQ(job(d.id).status, StoreStatus::kNotFound);
  bury_one("a");  // b: priority 4 comes before r2's 8
  EXPECT_EQ(
      call("POST", "/api/tubes/a/move", R"({"to": "z", "state": "buried", "count": 5})")["moved"],
      1);
  const TubeInfo zi = tube("z");
  EXPECT_EQ(zi.stats.ready, 2u);  // a buried job arrives ready, as a put
  EXPECT_EQ(zi.stats.total_jobs, 3u);
  const TubeInfo ai = tube("a");
  EXPECT_EQ(ai.stats.ready + ai.stats.buried + ai.stats.delayed, 1u);
  EXPECT_EQ(ai.stats.cmd_delete, 3u);
}

TEST_F(RedisConsoleTest, AMoveRedisRefusesChangesNothing) {
  put("a", 1, milliseconds(0), milliseconds(5000), "one");
  put("a", 1, milliseconds(0), milliseconds(5000), "two");
  ASSERT_EQ(redis({"CONFIG", "SET", "maxmemory-policy", "noeviction"}), "OK");
  ASSERT_EQ(redis({"CONFIG", "SET", "maxmemory", "1"}), "OK");
  const json refused =
      call("POST", "/api/tubes/a/move", R"({"to": "z", "state": "ready", "count": 2})", 507);
  EXPECT_NE(refused["error"].get<std::string>().find("maxmemory"), std::string::npos);
  ASSERT_EQ(redis({"CONFIG", "SET", "maxmemory", "0"}), "OK");
  EXPECT_EQ(tube("a").stats.ready, 2u);  // neither moved nor lost
  EXPECT_EQ(tube("z").status, StoreStatus::kNotFound);
  EXPECT_EQ(redis({"HLEN", "t:j"}), "2");  // no copy either
  EXPECT_EQ(
      call("POST", "/api/tubes/a/move", R"({"to": "z", "state": "ready", "count": 2})")["moved"],
      2);
  EXPECT_EQ(tube("z").stats.ready, 2u);
  EXPECT_EQ(tube("a").status, StoreStatus::kNotFound);  // emptied: dropped
  EXPECT_EQ(redis({"HLEN", "t:j"}), "2");
}

}  // namespace
}  // namespace wheel::jobs
