// SPDX-License-Identifier: Apache-2.0
// wheel::jobs::console on the Redis store (RedisConsole) against a real redis-server: the same
// JSON API as on the local queue (jobs_console_test.cc), the fleet's tubes and jobs.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

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
  EXPECT_TRUE(o["tubes"][0]["deliveries"].is_null());  // not counted on Redis
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

}  // namespace
}  // namespace wheel::jobs
