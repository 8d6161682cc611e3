// SPDX-License-Identifier: Apache-2.0
// Redis's reasons (redis_errors.h, RedisClient): every error reply is classified by Redis's own
// code, counted by cause and logged with Redis's message once, then at most once per interval
// (reason_log.h); reads never wait for replicas; wait_for_first_reply() (a node's start-up)
// tells a store that answers from one that was never reached. On a real redis-server.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "support/beanstalk_session.h"
#include "support/metrics_scrape.h"
#include "support/redis_store_fixture.h"
#include "support/timer_test_support.h"
#include "support/wheel_jobs_node.h"
#include "wheel/jobs/fleet/store_errors.h"
#include "wheel/redis/redis_errors.h"
#include "wheel/redis/redis_first_contact.h"

namespace wheel::jobs {
namespace {

using ::wheel::testing::LogCapture;
using wheel_test::redis_calls;
using wheel_test::redis_command;

// Redis 7.0's own messages, as it sends them (from scripts too).
TEST(RedisErrorCauses, AreToldByRedissOwnCode) {
  const std::pair<const char*, RedisErrorCause> cases[] = {
      {"READONLY You can't write against a read only replica. script: ff96, on @user_script:1.",
       RedisErrorCause::kReadonly},
      {"NOSCRIPT No matching script. Please use EVAL.", RedisErrorCause::kNoscript},
      {"OOM command not allowed when used memory > 'maxmemory'.", RedisErrorCause::kOom},
      {"NOAUTH Authentication required.", RedisErrorCause::kNoauth},
      {"WRONGPASS invalid username-password pair or user is disabled.",
       RedisErrorCause::kWrongpass},
      {"NOPERM this user has no permissions to run the 'evalsha' command",
       RedisErrorCause::kNoperm},
      {"ERR user_script:1: attempt to perform arithmetic on a nil value script: cd20, on "
       "@user_script:1.",
       RedisErrorCause::kScript},
      {"ERR Error running script (call to f_1): @user_script:1: oops", RedisErrorCause::kScript},
      {"ERR Error compiling script (new function): user_script:1: '=' expected",
       RedisErrorCause::kScript},
      {"MOVED 3999 127.0.0.1:6381", RedisErrorCause::kMoved},
      {"ASK 3999 127.0.0.1:6381", RedisErrorCause::kAsk},
      {"LOADING Redis is loading the dataset in memory", RedisErrorCause::kLoading},
      {"MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
       RedisErrorCause::kMasterdown},
      {"BUSY Redis is busy running a script.", RedisErrorCause::kBusy},
      {"BUSYKEY Target key name already exists.", RedisErrorCause::kOther},
      {"CLUSTERDOWN The cluster is down", RedisErrorCause::kTryagain},
      {"WRONGTYPE Operation against a key holding the wrong kind of value",
       RedisErrorCause::kWrongtype},
      {"ERR unknown command 'FLY'", RedisErrorCause::kOther},
  };
  for (const auto& [message, cause] : cases) {
    EXPECT_EQ(redis_error_cause_name(classify_redis_error(message)), redis_error_cause_name(cause))
        << message;
  }
  EXPECT_EQ(store_error_cause("ERR redis unavailable: cannot connect: Connection refused"),
            InternalErrorCause::kRedisUnavailable);
  EXPECT_EQ(store_error_cause("ERR not replicated: 0 of 1 replicas"),
            InternalErrorCause::kNotReplicated);
  EXPECT_EQ(store_error_cause("ERR unexpected reply from Redis"), InternalErrorCause::kBadReply);
  EXPECT_EQ(store_error_cause("READONLY You can't write"), InternalErrorCause::kRedisError);
}

// The rate limit, on a clock moved by hand: the first at once, then one line per interval with
// the count since the previous line.
TEST(ReasonLogRule, OneLineAtOnceThenOnePerIntervalWithTheCount) {
  LogCapture log;
  constexpr std::string_view kNames[] = {"a", "b"};
  ReasonLog reasons("test", kNames, milliseconds(10'000));
  EXPECT_TRUE(reasons.note(0, "first", 0));
  EXPECT_FALSE(reasons.note(0, "second", 5'000));
  EXPECT_TRUE(reasons.note(1, "other cause", 5'000));  // each cause has its own limit
  EXPECT_FALSE(reasons.note(0, "third", 9'999));
  EXPECT_TRUE(reasons.note(0, "fourth", 10'000));
  EXPECT_FALSE(reasons.note(0, "fifth", 19'999));
  reasons.count_only(0);
  EXPECT_EQ(reasons.count(0), 6u);
  EXPECT_EQ(reasons.count(1), 1u);
  EXPECT_EQ(log.count("test: first [a]; the same cause is logged again at most every 10 s"), 1);
  EXPECT_EQ(log.count("test: 3 [a] in the last 10 s; the latest: fourth"), 1);
  EXPECT_EQ(log.count("second"), 0);
  EXPECT_EQ(log.count("[a]"), 2);
}

class RedisErrorsTest : public RedisStoreTest {
 protected:
  RedisValue eval(RedisScript& script) {
    std::optional<RedisValue> r;
    client_->eval(script, {}, [&](const RedisValue& v) { r = v; });
    return wait(r);
  }
};

TEST_F(RedisErrorsTest, AScriptErrorIsLoggedOnceWithRedissMessageAndCountedEachTime) {
  LogCapture log;
  RedisScript broken("local x = nil + 1");
  for (int i = 0; i < 3; ++i) {
    const RedisValue v = eval(broken);
    ASSERT_TRUE(v.is_error());
    EXPECT_NE(v.str.find("user_script"), std::string::npos) << v.str;
  }
  EXPECT_EQ(client_->metrics().errored(RedisErrorCause::kScript), 3u);
  EXPECT_EQ(client_->metrics().failed(RedisFailure::kReply), 3u);  // the old series still counts
  EXPECT_EQ(log.count("attempt to perform arithmetic on a nil value"), 1);
  EXPECT_EQ(log.count("[script]"), 1);
}

TEST_F(RedisErrorsTest, AFlushedScriptCacheIsLoggedOnceAsNoscript) {
  LogCapture log;
  const InsertResult first = put("q", 0, milliseconds(0), milliseconds(1000), "a");
  ASSERT_EQ(first.status, StoreStatus::kOk) << first.error;
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(redis_command(redis_.port(), {"SCRIPT", "FLUSH"}), "OK");
    const InsertResult r = put("q", 0, milliseconds(0), milliseconds(1000), "b");
    ASSERT_EQ(r.status, StoreStatus::kOk) << r.error;  // resent as EVAL: no failure
  }
  EXPECT_EQ(client_->metrics().errored(RedisErrorCause::kNoscript), 2u);
  EXPECT_EQ(log.count("NOSCRIPT"), 1);
}

// --store-replicas on a primary with no replica: a change fails (WAIT says 0 of 1) but reads
// answer at once, with no WAIT sent.
TEST_F(RedisErrorsTest, ReadsNeverWaitForReplicas) {
  const InsertResult first = put("q", 0, milliseconds(0), milliseconds(60'000), "a");
  ASSERT_EQ(first.status, StoreStatus::kOk) << first.error;
  RedisEndpoint endpoint{"127.0.0.1", static_cast<std::uint16_t>(redis_.port()), 0, "", ""};
  RedisClientOptions o = test_options();
  o.replicas = 1;
  o.replica_timeout = milliseconds(500);
  connect(endpoint, o);
  EXPECT_EQ(peek_tube("q", PeekWhich::kReady).status, StoreStatus::kOk);
  EXPECT_EQ(job(first.id).status, StoreStatus::kOk);
  EXPECT_EQ(tube("q").status, StoreStatus::kOk);
  std::optional<PeekResult> peeked;
  store_->peek(first.id, [&](PeekResult&& r) { peeked = std::move(r); });
  EXPECT_EQ(wait(peeked).status, StoreStatus::kOk);
  std::optional<StoreTotals> totals;
  store_->totals([&](StoreTotals&& t) { totals = std::move(t); });
  EXPECT_EQ(wait(totals).status, StoreStatus::kOk);
  std::optional<ScanResult> scanned;
  store_->scan(10, {"q"}, [&](ScanResult&& s) { scanned = std::move(s); });
  EXPECT_EQ(wait(scanned).status, StoreStatus::kOk);
  EXPECT_EQ(redis_calls(redis_.port(), "wait"), 0);
  // A change still waits, and fails without the replica.
  const InsertResult change = put("q", 0, milliseconds(0), milliseconds(60'000), "b");
  EXPECT_EQ(change.status, StoreStatus::kError);
  EXPECT_NE(change.error.find("not replicated"), std::string::npos) << change.error;
  EXPECT_EQ(redis_calls(redis_.port(), "wait"), 1);
}

TEST_F(RedisErrorsTest, FirstContactAnswersForARedisThatIsUpAndTellsWhyForOneThatIsNot) {
  EXPECT_EQ(wait_for_first_reply(&loop_, *client_, milliseconds(10'000)), "");
  const int unused = wheel_test::free_port();
  connect({"127.0.0.1", static_cast<std::uint16_t>(unused), 0, "", ""});
  const auto started = Clock::now();
  const std::string why = wait_for_first_reply(&loop_, *client_, milliseconds(300));
  EXPECT_NE(why.find("cannot connect"), std::string::npos) << why;
  EXPECT_LT(Clock::now() - started, std::chrono::seconds(10));  // bounded (300 ms asked)
}

}  // namespace
}  // namespace wheel::jobs

namespace wheel::jobs {
namespace {

// A file for a child's stderr (its log), removed at the end.
class LogFile {
 public:
  LogFile() {
    char name[] = "/tmp/wheel-jobs-log-XXXXXX";
    fd_ = mkstemp(name);
    path_ = name;
  }
  ~LogFile() {
    if (fd_ >= 0) close(fd_);
    std::remove(path_.c_str());
  }
  int fd() const { return fd_; }
  // Lines containing `needle`.
  int count(const std::string& needle) const {
    std::ifstream in(path_);
    int n = 0;
    for (std::string line; std::getline(in, line);) n += line.find(needle) != std::string::npos;
    return n;
  }

 private:
  int fd_ = -1;
  std::string path_;
};

// A node on a primary with no replica and --store-replicas 1: reads answer at once (before, a
// peek waited out the replica timeout and answered INTERNAL_ERROR, with nothing logged); a
// change is refused, logged once with its cause and counted by it.
TEST(WheelJobsNodeReasons, ReadsDoNotWaitForReplicasAndARefusedChangeSaysWhy) {
  wheel_test::RedisServer redis;
  LogFile log;
  const auto metrics = static_cast<std::uint16_t>(wheel_test::free_port());
  wheel_test::ServerProcess node(
      {WHEEL_JOBS_PATH, "--store", redis.url(), "--port", "0", "--log-level", "warn",
       "--store-replicas", "1", "--store-replica-timeout", "2s", "--metrics-port",
       std::to_string(metrics)},
      log.fd());
  ASSERT_GT(node.port(), 0);
  wheel_test::BeanstalkSession c(node.port());
  EXPECT_EQ(c.call("peek 1"), "NOT_FOUND");
  EXPECT_EQ(c.call("stats-job 1"), "NOT_FOUND");
  EXPECT_EQ(c.call("peek-ready"), "NOT_FOUND");
  EXPECT_EQ(redis_calls(redis.port(), "wait"), 0);
  EXPECT_EQ(c.put(0, "0", "60", "a"), "INTERNAL_ERROR");
  EXPECT_EQ(c.put(0, "0", "60", "b"), "INTERNAL_ERROR");
  const auto e = wheel_test::scrape(metrics).e;
  EXPECT_EQ(e.value("wheel_jobs_internal_errors_total", {{"cause", "not_replicated"}}), 2);
  EXPECT_EQ(e.value("wheel_jobs_internal_errors_total", {{"cause", "redis_error"}}), 0);
  EXPECT_EQ(node.stop(), 0);
  EXPECT_EQ(log.count("answered INTERNAL_ERROR: ERR not replicated: 0 of 1 replicas"), 1);
}

// A store never reached (a typo in --store): no `listening on`, exit 1 naming the store.
TEST(WheelJobsNodeReasons, AStoreNeverReachedIsRefusedAtStartUpNamingIt) {
  const int unused = wheel_test::free_port();
  const std::string url = "redis://127.0.0.1:" + std::to_string(unused);
  // `timeout`: a node that listens anyway must fail the test, not hang it.
  const auto [status, out] = wheel_test::run_to_exit(
      "timeout 60 " WHEEL_JOBS_PATH, "--store " + url + " --port 0 --store-connect-timeout 500ms");
  EXPECT_EQ(status, 1) << out;
  EXPECT_NE(out.find("the store at " + url + "/0 did not answer within 500 ms"), std::string::npos)
      << out;
  EXPECT_NE(out.find("Connection refused"), std::string::npos) << out;
  EXPECT_EQ(out.find("listening on"), std::string::npos) << out;
  // 0: as before, it listens at once and keeps retrying.
  wheel_test::ServerProcess patient({WHEEL_JOBS_PATH, "--store", url, "--port", "0", "--log-level",
                                     "error", "--store-connect-timeout", "0"});
  EXPECT_GT(patient.port(), 0);
}

}  // namespace
}  // namespace wheel::jobs
