// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <wheel/load/idle_close.h>
#include <wheel/load/jobs_load_report.h>
#include <wheel/load/load_config.h>
#include <wheel/load/load_result.h>
#include <wheel/load/report.h>
#include <csignal>
#include <nlohmann/json.hpp>

namespace wheel::load {

using namespace std::chrono_literals;

namespace {

// A run where everything held: 10 connections, 4 active, 6 idle closed on time.
LoadResult good_result() {
  LoadResult r;
  r.connections_requested = r.connections_established = 10;
  r.active_count = r.active_survived = 4;
  r.idle_count = r.idle_closed_on_time = 6;
  r.pings_sent = 40;
  r.pongs_received = 38;  // two still in flight at the end: allowed
  r.idle_lateness_ms = {1, 2, 3, 4, 5, 6};
  r.rtt_ms = {0.1, 0.2};
  r.duration_s = 4;
  return r;
}

}  // namespace

TEST(LoadReport, ClassifiesIdleCloseByLateness) {
  EXPECT_EQ(classify_idle_close(-51, 1000), IdleClose::kEarly);
  EXPECT_EQ(classify_idle_close(-50, 1000), IdleClose::kOnTime);
  EXPECT_EQ(classify_idle_close(0, 1000), IdleClose::kOnTime);
  EXPECT_EQ(classify_idle_close(1000, 1000), IdleClose::kOnTime);
  EXPECT_EQ(classify_idle_close(1000.5, 1000), IdleClose::kLate);
}

TEST(LoadReport, GoodRunHasNoFailures) {
  const auto j = make_report(good_result(), LoadConfig{});
  EXPECT_TRUE(j["ok"].get<bool>());
  EXPECT_TRUE(j["failures"].empty());
}

TEST(LoadReport, JsonHasEveryKeyTheIssueNames) {
  const auto j = make_report(good_result(), LoadConfig{});
  for (const char* k :
       {"connections_requested", "connections_established", "connect_errors", "active", "idle",
        "rtt_ms", "pings_sent", "pongs_received", "duration_s", "ok"}) {
    EXPECT_TRUE(j.contains(k)) << k;
  }
  for (const char* k : {"count", "survived", "closed_early"}) EXPECT_TRUE(j["active"].contains(k));
  for (const char* k : {"count", "closed_on_time", "closed_early", "closed_late", "never_closed"}) {
    EXPECT_TRUE(j["idle"].contains(k)) << k;
  }
  for (const char* k : {"p50", "p90", "p99", "max"}) {
    EXPECT_TRUE(j["idle"]["lateness_ms"].contains(k)) << k;
    EXPECT_TRUE(j["rtt_ms"].contains(k)) << k;
  }
  EXPECT_EQ(j["idle"]["lateness_ms"]["p50"].get<double>(), 3);
  EXPECT_EQ(j["rtt_ms"]["max"].get<double>(), 0.2);
}

TEST(LoadReport, PercentilesWithoutSamplesAreNull) {
  LoadResult r = good_result();
  r.rtt_ms.clear();
  const auto j = make_report(r, LoadConfig{});
  EXPECT_TRUE(j["rtt_ms"]["p50"].is_null());
  EXPECT_TRUE(j["rtt_ms"]["max"].is_null());
}

TEST(LoadReport, NeverClosedIdleFailsTheRun) {
  LoadResult r = good_result();
  r.idle_closed_on_time = 0;
  r.idle_never_closed = 6;
  const auto failures = failed_expectations(r, LoadConfig{});
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_NE(failures[0].find("6 of 6 idle connections were never closed"), std::string::npos);
}

TEST(LoadReport, EarlyAndLateIdleClosesEachFail) {
  LoadResult r = good_result();
  r.idle_closed_on_time = 4;
  r.idle_closed_early = 1;
  r.idle_closed_late = 1;
  EXPECT_EQ(failed_expectations(r, LoadConfig{}).size(), 2u);
}

TEST(LoadReport, ExpectIdleCloseZeroWantsIdleOpenAtTheEnd) {
  LoadConfig config;
  config.expect_idle_close = 0ms;
  LoadResult r = good_result();
  r.idle_closed_on_time = 0;
  r.idle_never_closed = 6;
  EXPECT_TRUE(failed_expectations(r, config).empty());
  r.idle_never_closed = 5;
  r.idle_closed_early = 1;
  EXPECT_EQ(failed_expectations(r, config).size(), 1u);
}

TEST(LoadReport, ActiveClosedEarlyConnectErrorsAndMissingPongsFail) {
  LoadResult r = good_result();
  r.active_survived = 3;
  r.active_closed_early = 1;
  EXPECT_EQ(failed_expectations(r, LoadConfig{}).size(), 1u);

  r = good_result();
  r.connections_requested = 12;
  r.connect_errors = 2;
  r.connect_errors_by_kind["ECONNREFUSED"] = 2;
  const auto f = failed_expectations(r, LoadConfig{});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].find("ECONNREFUSED 2"), std::string::npos) << f[0];

  r = good_result();
  r.pongs_received = 30;  // 10 missing, more than one per active connection
  EXPECT_EQ(failed_expectations(r, LoadConfig{}).size(), 1u);
}

TEST(LoadReport, MergeAddsCountersAndSamples) {
  LoadResult a = good_result();
  LoadResult b = good_result();
  b.connect_errors_by_kind["EMFILE"] = 3;
  b.duration_s = 5;
  b.peak_open = 7;
  merge(a, b);
  EXPECT_EQ(a.connections_requested, 20u);
  EXPECT_EQ(a.idle_closed_on_time, 12u);
  EXPECT_EQ(a.idle_lateness_ms.size(), 12u);
  EXPECT_EQ(a.rtt_ms.size(), 4u);
  EXPECT_EQ(a.connect_errors_by_kind["EMFILE"], 3u);
  EXPECT_EQ(a.duration_s, 5);
  EXPECT_EQ(a.peak_open, 7u);
}

TEST(LoadReport, ResultSurvivesJsonRoundTrip) {
  LoadResult r = good_result();
  r.connect_errors_by_kind["ECONNRESET"] = 1;
  r.idle_not_yet_due = 2;
  r.delays_sent = 9;
  r.delayed_lateness_ms = {1.5};
  r.churn_completed = 4;
  r.slow_pongs_received = 3;
  const LoadResult back = nlohmann::json(r).get<LoadResult>();
  EXPECT_EQ(nlohmann::json(back), nlohmann::json(r));
}

TEST(LoadReport, ActiveConnectionsAreSpreadEvenly) {
  std::size_t active = 0, first_half = 0;
  for (std::size_t i = 0; i < 1000; ++i) {
    if (wheel::load::is_active(i, 0.1)) {
      ++active;
      if (i < 500) ++first_half;
    }
  }
  EXPECT_EQ(active, 100u);
  EXPECT_EQ(first_half, 50u);
  EXPECT_FALSE(wheel::load::is_active(3, 0.0));
  EXPECT_TRUE(wheel::load::is_active(3, 1.0));
}

TEST(LoadReport, IdleNotYetDueIsNoFailureAndTheSummarySaysSo) {
  LoadResult r = good_result();
  r.idle_closed_on_time = 0;
  r.idle_not_yet_due = 6;
  EXPECT_TRUE(failed_expectations(r, LoadConfig{}).empty());
  const auto text = format_summary(make_report(r, LoadConfig{}));
  EXPECT_NE(text.find("6 idle connections were not yet due"), std::string::npos) << text;
  EXPECT_NE(text.find("result: OK"), std::string::npos);
}

// A run of the mix where everything held: 5 DELAYs (4 delivered, 1 not yet due), 6 unknown
// commands rejected, 64 slow PINGs answered, 10 churn cycles.
LoadResult good_mix() {
  LoadResult r = good_result();
  r.delays_sent = r.delays_acknowledged = 5;
  r.delayed_on_time = 4;
  r.delayed_not_yet_due = 1;
  r.garbage_sent = r.garbage_rejected = 6;
  r.slow_pings_sent = r.slow_pongs_received = 64;
  r.churn_started = r.churn_established = r.churn_completed = 10;
  return r;
}

TEST(LoadReport, MixThatHeldHasNoFailures) {
  LoadConfig config;
  config.churn = 2;
  config.churn_rate = 10;
  EXPECT_TRUE(failed_expectations(good_mix(), config).empty());
  const auto text = format_summary(make_report(good_mix(), config));
  EXPECT_NE(text.find("DELAY: 5 sent, 5 OK, 4 delivered on time"), std::string::npos) << text;
  EXPECT_NE(text.find("churn: 10 cycles started"), std::string::npos) << text;
}

TEST(LoadReport, EachBrokenMixExpectationFails) {
  const auto fails = [](auto&& spoil) {
    LoadResult r = good_mix();
    spoil(r);
    return failed_expectations(r, LoadConfig{});
  };
  EXPECT_EQ(fails([](LoadResult& r) { ++r.delayed_early, --r.delayed_on_time; }).size(), 1u);
  EXPECT_EQ(fails([](LoadResult& r) { ++r.delayed_late, --r.delayed_on_time; }).size(), 1u);
  EXPECT_EQ(fails([](LoadResult& r) { ++r.delayed_missing, --r.delayed_not_yet_due; }).size(), 1u);
  EXPECT_EQ(fails([](LoadResult& r) { --r.delays_acknowledged; }).size(), 1u);
  EXPECT_EQ(fails([](LoadResult& r) { --r.garbage_rejected; }).size(), 1u);
  EXPECT_EQ(fails([](LoadResult& r) { --r.slow_pongs_received; }).size(), 1u);
  EXPECT_EQ(fails([](LoadResult& r) { ++r.churn_failed, --r.churn_completed; }).size(), 1u);
  EXPECT_EQ(fails([](LoadResult& r) { ++r.unexpected_lines; }).size(), 1u);
  const auto late = fails([](LoadResult& r) { ++r.delayed_late, --r.delayed_on_time; });
  EXPECT_NE(late[0].find("1 of 5 DELAY messages were delivered late"), std::string::npos);
}

TEST(LoadReport, ChurnThatNeverCompletesFails) {
  LoadConfig config;
  config.churn = 2;
  config.churn_rate = 10;
  LoadResult r = good_result();  // no cycle at all
  EXPECT_EQ(failed_expectations(r, config).size(), 1u);
}

TEST(LoadReport, SummaryNotesALongClientStall) {
  LoadResult r = good_result();
  EXPECT_EQ(format_summary(make_report(r, LoadConfig{})).find("stalled"), std::string::npos);
  r.max_loop_stall_ms = 4600;
  const auto j = make_report(r, LoadConfig{});
  EXPECT_EQ(j["max_loop_stall_ms"].get<double>(), 4600);
  EXPECT_NE(format_summary(j).find("loop stalled for up to 4600 ms"), std::string::npos);
}

TEST(LoadReport, SummarySaysOkOrListsFailures) {
  EXPECT_NE(format_summary(make_report(good_result(), LoadConfig{})).find("result: OK"),
            std::string::npos);
  LoadResult r = good_result();
  r.idle_never_closed = 6;
  r.idle_closed_on_time = 0;
  const auto text = format_summary(make_report(r, LoadConfig{}));
  EXPECT_NE(text.find("result: FAILED"), std::string::npos);
  EXPECT_NE(text.find("never closed"), std::string::npos);
}

// Issue 22 items 1, 4, 5: a run that ended early says why first, and the reasons survive the
// trip from a child process to its parent and the merge.
TEST(LoadReport, EarlyEndsFailFirstAndSurviveTheRoundTripAndTheMerge) {
  LoadResult r = good_result();
  r.interrupted_by = SIGINT;
  r.duration_s = 4;
  r.gave_up = "no connection could be made";
  r.server_shutdown_at_s = 2.5;
  r.active_closed_by_shutdown = 3;
  r.idle_closed_by_shutdown = 4;
  r.heartbeats_received = 7;
  r.heartbeats_answered = 5;
  const auto failures = failed_expectations(r, LoadConfig{});
  ASSERT_GE(failures.size(), 3U);
  EXPECT_EQ(failures[0], "interrupted by SIGINT after 4.0 s: the figures cover the run until then");
  EXPECT_EQ(failures[1], "gave up: no connection could be made");
  EXPECT_NE(failures[2].find("the server shut down 2.5 s into the run"), std::string::npos);
  const auto j = make_report(r, LoadConfig{});
  EXPECT_EQ(j["interrupted"]["signal"], "SIGINT");
  EXPECT_EQ(j["server_shutdown"]["idle_closed"], 4);
  EXPECT_EQ(j["heartbeats"]["answered"], 5);

  const LoadResult back = nlohmann::json(r).get<LoadResult>();
  EXPECT_EQ(back.interrupted_by, SIGINT);
  EXPECT_EQ(back.gave_up, r.gave_up);
  EXPECT_EQ(back.server_shutdown_at_s, 2.5);
  EXPECT_EQ(back.idle_closed_by_shutdown, 4U);
  EXPECT_EQ(back.heartbeats_received, 7U);

  LoadResult merged = good_result();  // a process that saw no shutdown
  LoadResult later = r;
  later.server_shutdown_at_s = 3;
  merge(merged, later);
  merge(merged, r);
  EXPECT_EQ(merged.server_shutdown_at_s, 2.5) << "the earliest shutdown";
  EXPECT_EQ(merged.interrupted_by, SIGINT);
  EXPECT_EQ(merged.heartbeats_received, 14U);
  EXPECT_EQ(merged.idle_closed_by_shutdown, 8U);
  const LoadResult plain = good_result();
  EXPECT_TRUE(make_report(plain, LoadConfig{})["interrupted"].is_null());
  EXPECT_TRUE(make_report(plain, LoadConfig{})["gave_up"].is_null());
  EXPECT_TRUE(make_report(plain, LoadConfig{})["server_shutdown"].is_null());
}

// wheel-jobs-load's figures, compared whole (so a key too many fails too): settings and counts
// under their names, the percentiles in the one form of percentiles_json (three decimals; null
// without samples), the lateness keys only for a lateness run, the error keys only when set.
TEST(JobsLoadReport, FiguresOfAPutRun) {
  JobsLoadConfig c;
  c.port = 11301;
  c.connections = 3;
  JobsLoadResult r;
  r.sent = 10;
  r.acknowledged = 9;
  r.error_replies = 1;
  r.elapsed_s = 2;
  r.per_second = 4.5;
  r.reply_ms = summarize({1.0, 2.0, 3.00049});
  EXPECT_EQ(jobs_load_json(c, r), nlohmann::json::parse(R"({
    "protocol": "beanstalk", "port": 11301, "connections": 3, "window": 64, "body_size": 100,
    "sent": 10, "acknowledged": 9, "error_replies": 1, "elapsed_s": 2.0, "per_second": 4.5,
    "reply_ms": {"p50": 2.0, "p90": 3.0, "p99": 3.0, "max": 3.0, "min": 1.0, "count": 3}})"));
}

TEST(JobsLoadReport, FiguresOfALatenessRunThatFailed) {
  JobsLoadConfig c;
  c.phase = JobsPhase::kLateness;
  JobsLoadResult r;
  r.probes_put = 7;
  r.probes_missing = 2;
  r.error = "stalled";
  r.first_error_reply = "OUT_OF_MEMORY";
  const nlohmann::json none = nlohmann::json::parse(
      R"({"p50": null, "p90": null, "p99": null, "max": null, "min": null, "count": 0})");
  EXPECT_EQ(jobs_load_json(c, r), nlohmann::json::parse(R"({
    "protocol": "beanstalk", "port": 11300, "connections": 8, "window": 64, "body_size": 100,
    "sent": 0, "acknowledged": 0, "error_replies": 0, "elapsed_s": 0.0, "per_second": 0.0,
    "reply_ms": )" + none.dump() + R"(, "lateness_ms": )" +
                                                        none.dump() + R"(,
    "probes_put": 7, "probes_missing": 2, "others_reserved": 0,
    "first_error_reply": "OUT_OF_MEMORY", "error": "stalled"})"));
}

}  // namespace wheel::load
