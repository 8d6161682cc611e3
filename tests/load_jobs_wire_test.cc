// SPDX-License-Identifier: Apache-2.0
// wheel-jobs-load's pure parts: the request bytes of both protocols, the reply parser (split at
// every byte), the job body, the option checks and the goal table.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "wheel/load/jobs_compare.h"
#include "wheel/load/jobs_load.h"
#include "wheel/load/jobs_wire.h"
#include "wheel/load/percentiles.h"

namespace {

using wheel::load::JobsProtocol;
using wheel::load::JobsReply;
using wheel::load::JobsReplyParser;
using wheel::load::JobsRequestWriter;
using Expect = JobsReplyParser::Expect;
using Kind = JobsReply::Kind;

// Feeds `stream` cut at `cut` (two pieces) and returns the replies; fails the test on a fault.
std::vector<JobsReply> parse_cut(JobsProtocol p, const std::string& stream, std::size_t cut,
                                 const std::vector<Expect>& expects) {
  JobsReplyParser parser(p);
  std::vector<JobsReply> out;
  std::size_t answered = 0;
  auto next = [&](std::size_t i) { return expects.at(answered + i); };
  EXPECT_TRUE(parser.feed(std::string_view(stream).substr(0, cut), next, out)) << parser.error();
  answered = out.size();
  EXPECT_TRUE(parser.feed(std::string_view(stream).substr(cut), next, out)) << parser.error();
  return out;
}

TEST(JobsWire, BeanstalkRequestsAreTheProtocolsBytes) {
  JobsRequestWriter w(JobsProtocol::kBeanstalk);
  std::string out;
  EXPECT_EQ(w.append_hello(out), 0);
  w.append_put(out, "a\r\nb", 3600, 60, 0);
  w.append_delete(out, 42);
  w.append_reserve(out, 1);
  w.append_count(out);
  EXPECT_EQ(out, "put 0 3600 60 4\r\na\r\nb\r\ndelete 42\r\nreserve-with-timeout 1\r\nstats\r\n");
}

TEST(JobsWire, RedisPutIsOneScriptCallWithTheDueTimeAndTheBody) {
  JobsRequestWriter w(JobsProtocol::kRedis);
  std::string hello;
  EXPECT_EQ(w.append_hello(hello), 2);
  EXPECT_NE(hello.find("SCRIPT"), std::string::npos);
  EXPECT_NE(hello.find("ZADD"), std::string::npos);
  w.set_script_shas("PUTSHA", "DELSHA");
  std::string out;
  w.append_put(out, "body", 2, 60, 1'000);
  EXPECT_EQ(out,
            "*8\r\n$7\r\nEVALSHA\r\n$6\r\nPUTSHA\r\n$1\r\n3\r\n$6\r\nwjl:id\r\n$7\r\nwjl:due\r\n"
            "$8\r\nwjl:body\r\n$4\r\n3000\r\n$4\r\nbody\r\n");
  out.clear();
  w.append_delete(out, 7);
  EXPECT_EQ(out,
            "*7\r\n$7\r\nEVALSHA\r\n$6\r\nDELSHA\r\n$1\r\n3\r\n$6\r\nwjl:id\r\n$7\r\nwjl:due\r\n"
            "$8\r\nwjl:body\r\n$1\r\n7\r\n");
}

TEST(JobsWire, BeanstalkRepliesParseHoweverTheStreamIsCut) {
  const std::string yaml =
      "---\ncurrent-jobs-urgent: 5\ncurrent-jobs-ready: 1\ncurrent-jobs-reserved: 2\n"
      "current-jobs-delayed: 3\ncurrent-jobs-buried: 4\n";
  const std::string stream =
      "INSERTED 7\r\nDELETED\r\nNOT_FOUND\r\nRESERVED 9 6\r\nhe\r\nlo\r\nTIMED_OUT\r\n"
      "OUT_OF_MEMORY\r\nOK " +
      std::to_string(yaml.size()) + "\r\n" + yaml + "\r\n";
  const std::vector<Expect> expects{Expect::kPut,     Expect::kDelete,  Expect::kDelete,
                                    Expect::kReserve, Expect::kReserve, Expect::kPut,
                                    Expect::kCount};
  for (std::size_t cut = 0; cut <= stream.size(); ++cut) {
    const auto r = parse_cut(JobsProtocol::kBeanstalk, stream, cut, expects);
    ASSERT_EQ(r.size(), 7u) << "cut at " << cut;
    EXPECT_EQ(r[0].kind, Kind::kInserted);
    EXPECT_EQ(r[0].id, 7u);
    EXPECT_EQ(r[1].kind, Kind::kDeleted);
    EXPECT_EQ(r[2].kind, Kind::kNotFound);
    EXPECT_EQ(r[3].kind, Kind::kReserved);
    EXPECT_EQ(r[3].id, 9u);
    EXPECT_EQ(r[3].text, "he\r\nlo");
    EXPECT_EQ(r[4].kind, Kind::kTimedOut);
    EXPECT_EQ(r[5].kind, Kind::kError);
    EXPECT_EQ(r[5].text, "OUT_OF_MEMORY");
    EXPECT_EQ(r[6].kind, Kind::kCount);
    EXPECT_EQ(r[6].id, 10u) << "urgent jobs are counted in ready already";
  }
}

TEST(JobsWire, RedisRepliesParseHoweverTheStreamIsCut) {
  const std::string stream = "$6\r\nabcdef\r\n+OK\r\n:5\r\n:1\r\n:0\r\n-ERR no\r\n:12\r\n";
  const std::vector<Expect> expects{Expect::kHello,  Expect::kHello, Expect::kPut,  Expect::kDelete,
                                    Expect::kDelete, Expect::kPut,   Expect::kCount};
  for (std::size_t cut = 0; cut <= stream.size(); ++cut) {
    const auto r = parse_cut(JobsProtocol::kRedis, stream, cut, expects);
    ASSERT_EQ(r.size(), 7u) << "cut at " << cut;
    EXPECT_EQ(r[0].kind, Kind::kText);
    EXPECT_EQ(r[0].text, "abcdef");
    EXPECT_EQ(r[1].kind, Kind::kText);
    EXPECT_EQ(r[2].kind, Kind::kInserted);
    EXPECT_EQ(r[2].id, 5u);
    EXPECT_EQ(r[3].kind, Kind::kDeleted);
    EXPECT_EQ(r[4].kind, Kind::kNotFound);
    EXPECT_EQ(r[5].kind, Kind::kError);
    EXPECT_EQ(r[5].text, "ERR no");
    EXPECT_EQ(r[6].kind, Kind::kCount);
    EXPECT_EQ(r[6].id, 12u);
  }
}

TEST(JobsWire, BrokenStreamsAreRefusedWithAReason) {
  const auto refused = [](JobsProtocol p, const std::string& bytes, Expect e) {
    JobsReplyParser parser(p);
    std::vector<JobsReply> out;
    const bool ok = parser.feed(
        bytes, [e](std::size_t) { return e; }, out);
    return !ok && !parser.error().empty();
  };
  EXPECT_TRUE(refused(JobsProtocol::kBeanstalk, "INSERTED x\r\n", Expect::kPut));
  EXPECT_TRUE(refused(JobsProtocol::kBeanstalk, "RESERVED 1 2\r\nabXX", Expect::kReserve));
  EXPECT_TRUE(refused(JobsProtocol::kBeanstalk, "RESERVED 1 99999999999\r\n", Expect::kReserve));
  EXPECT_TRUE(refused(JobsProtocol::kBeanstalk, std::string(2000, 'a'), Expect::kPut));
  EXPECT_TRUE(refused(JobsProtocol::kBeanstalk, "OK 3\r\nabc\r\n", Expect::kCount));
  EXPECT_TRUE(refused(JobsProtocol::kRedis, "*1\r\n", Expect::kPut));
  EXPECT_TRUE(refused(JobsProtocol::kRedis, ":-1\r\n", Expect::kPut));
  EXPECT_TRUE(refused(JobsProtocol::kRedis, "$2\r\nabXX", Expect::kHello));
}

TEST(JobsWire, JobsHeldSumsTheStatsFieldsThatStartALine) {
  EXPECT_EQ(wheel::load::jobs_held_from_stats("current-jobs-ready: 1\ncurrent-jobs-reserved: 2\n"
                                              "current-jobs-delayed: 3\ncurrent-jobs-buried: 4\n"),
            10);
  EXPECT_EQ(wheel::load::jobs_held_from_stats("current-jobs-ready: 1\n"), -1);
  EXPECT_EQ(wheel::load::jobs_held_from_stats("xcurrent-jobs-ready: 1\ncurrent-jobs-reserved: 2\n"
                                              "current-jobs-delayed: 3\ncurrent-jobs-buried: 4\n"),
            -1);
}

TEST(JobsBody, CarriesItsSendTimeDelayAndProbeFlag) {
  const std::string body = wheel::load::make_job_body(100, 1'700'000'000'123'456, 3'000, true);
  ASSERT_EQ(body.size(), 100u);
  std::int64_t us = 0;
  std::uint64_t delay = 0;
  bool probe = false;
  ASSERT_TRUE(wheel::load::parse_job_body(body, us, delay, probe));
  EXPECT_EQ(us, 1'700'000'000'123'456);
  EXPECT_EQ(delay, 3'000u);
  EXPECT_TRUE(probe);
  const std::string small = wheel::load::make_job_body(8, 1, 2, false);
  EXPECT_EQ(small, std::string(8, 'x'));
  EXPECT_FALSE(wheel::load::parse_job_body(small, us, delay, probe));
  EXPECT_FALSE(wheel::load::parse_job_body("wjl 12 x 1 ", us, delay, probe));
}

TEST(JobsLoadChecks, NameTheFieldAndItsRange) {
  wheel::load::JobsLoadConfig c;
  c.count = 10;
  EXPECT_EQ(wheel::load::check_jobs_load(c), "");
  c.window = 0;
  EXPECT_EQ(wheel::load::check_jobs_load(c), "window must be from 1 to 100000, got 0");
  c.window = 1;
  c.count = 0;
  EXPECT_NE(wheel::load::check_jobs_load(c).find("count or a duration"), std::string::npos);
  c.count = 1;
  c.delay_min_s = 10;
  c.delay_max_s = 9;
  EXPECT_NE(wheel::load::check_jobs_load(c).find("delay max"), std::string::npos);
  c.delay_max_s = 10;
  c.phase = wheel::load::JobsPhase::kLateness;
  c.duration = std::chrono::seconds(5);
  c.protocol = JobsProtocol::kRedis;
  EXPECT_NE(wheel::load::check_jobs_load(c).find("beanstalkd's protocol"), std::string::npos);
}

TEST(JobsCompare, MedianOfOddAndEvenCounts) {
  EXPECT_EQ(wheel::load::median({3, 1, 2}), 2);
  EXPECT_EQ(wheel::load::median({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(wheel::load::median({}), 0);
}

}  // namespace

// White-box: the goal table (load/src/jobs_goals.h) from medians, at its thresholds.
#include "jobs_goals.h"

namespace {

using Values = std::map<std::string, std::map<std::string, std::vector<double>>>;

nlohmann::json goal(const nlohmann::json& summary, std::size_t row) {
  return summary["goals"].at(row)["met"];
}

TEST(JobsGoals, DurablePutsNeedTwentyTimesBeanstalkdAndOneAndAHalfTimesRedis) {
  using namespace wheel::load;
  Values v;
  v["puts_per_s"][kWheelAlways] = {20'000, 30'000, 10'000};  // median 20,000
  v["puts_per_s"][kBeanstalkF0] = {1'000};
  EXPECT_EQ(goal(summarize_goals(v, 1000, 100), 0), true);
  v["puts_per_s"][kBeanstalkF0] = {1'001};
  EXPECT_EQ(goal(summarize_goals(v, 1000, 100), 0), false);
  v["puts_per_s"][kBeanstalkF0] = {1'000};
  v["puts_per_s"][kRedisAlways] = {13'334};
  EXPECT_EQ(goal(summarize_goals(v, 1000, 100), 0), false);
  v["puts_per_s"][kRedisAlways] = {13'333};
  EXPECT_EQ(goal(summarize_goals(v, 1000, 100), 0), true);
  EXPECT_TRUE(goal(summarize_goals(v, 1000, 100), 1).is_null()) << "memory only not measured";
}

TEST(JobsGoals, PendingRowsCompareWithBeanstalkd) {
  using namespace wheel::load;
  Values v;
  v["lateness_p50_ms"][kWheelF50] = {1};
  v["lateness_p99_ms"][kWheelF50] = {5};
  v["lateness_max_ms"][kWheelF50] = {9};
  v["rss_per_job_bytes"][kWheelF50] = {150};
  v["rss_per_job_bytes"][kBeanstalkF50] = {300};
  v["restart_s"][kWheelF50] = {0.5};
  v["restart_s"][kBeanstalkF50] = {1.0};
  v["log_bytes_after_delete"][kWheelF50] = {2 * 1000 * 158.0 + 2 * kWheelSegmentBytes};
  v["jobs_after_delete"][kWheelF50] = {1000};
  nlohmann::json s = summarize_goals(v, 1000, 100);
  EXPECT_EQ(goal(s, 2), true);
  EXPECT_EQ(goal(s, 3), true);
  EXPECT_EQ(goal(s, 4), true);
  EXPECT_EQ(goal(s, 5), true);
  v["lateness_p99_ms"][kWheelF50] = {5.01};
  v["rss_per_job_bytes"][kWheelF50] = {151};
  v["restart_s"][kWheelF50] = {0.51};
  v["log_bytes_after_delete"][kWheelF50] = {2 * 1000 * 158.0 + 2 * kWheelSegmentBytes + 1};
  s = summarize_goals(v, 1000, 100);
  EXPECT_EQ(goal(s, 2), false);
  EXPECT_EQ(goal(s, 3), false);
  EXPECT_EQ(goal(s, 4), false);
  EXPECT_EQ(goal(s, 5), false);
  const std::string table = format_goal_table(s);
  EXPECT_NE(table.find("**not met**"), std::string::npos);
  EXPECT_NE(table.find("| puts/s, memory only | >= 1.5x beanstalkd without -b | not measured"),
            std::string::npos);
}

}  // namespace
