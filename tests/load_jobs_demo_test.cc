// SPDX-License-Identifier: Apache-2.0
// The durable-jobs demo (wheel/load/jobs_demo.h) and its ledger (jobs_ledger.h). The ledger is
// checked with hand-made reserve times; the demo runs against the real wheel-jobs of this build
// (WHEEL_JOBS_PATH), small and with 1-2 s delays, once as it is and once with a fault planted
// out of band before its reserves: an acknowledged job deleted (lost) and a job whose body says
// it is due in a minute put with no delay (early). The program's `demo` mode runs once.
// Waits are bounded by the demo's own bounds (lost_after, the loads' stall timeouts).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

#include "support/beanstalk_client.h"
#include "support/child_process.h"
#include "wheel/load/jobs_demo.h"
#include "wheel/load/jobs_ledger.h"
#include "wheel/load/jobs_load.h"

namespace wheel::load {
namespace {

using namespace std::chrono_literals;

constexpr std::int64_t kSentUs = 1'000'000'000'000;  // a put's send time in the bodies below

std::string body_due_in(std::uint64_t delay_ms) {
  return make_job_body(100, kSentUs, delay_ms, false);
}

TEST(JobsLedger, AJobReservedAtOrAfterItsDueTimeIsOnTimeAndTimed) {
  JobsLedger ledger;
  ledger.acknowledge({7, 8});
  EXPECT_FALSE(ledger.reserve(7, body_due_in(1000), kSentUs + 1'000'000));
  EXPECT_TRUE(ledger.reserve(8, body_due_in(2000), kSentUs + 2'003'000));
  EXPECT_EQ(ledger.acknowledged(), 2u);
  EXPECT_EQ(ledger.reserved(), 2u);
  EXPECT_EQ(ledger.lost(), 0u);
  EXPECT_EQ(ledger.early(), 0u);
  ASSERT_TRUE(ledger.lateness_ms().has_value());
  EXPECT_EQ(ledger.lateness_ms()->count, 2u);
  EXPECT_DOUBLE_EQ(ledger.lateness_ms()->min, 0.0);
  EXPECT_DOUBLE_EQ(ledger.lateness_ms()->max, 3.0);
}

TEST(JobsLedger, AJobReservedBeforeItsDueTimeIsEarlyBeyondTheClocksMillisecondSlack) {
  JobsLedger ledger;
  ledger.acknowledge({1, 2, 3});
  ledger.reserve(1, body_due_in(1000), kSentUs + 999'000);  // 1 ms: the servers' clock grain
  ledger.reserve(2, body_due_in(1000), kSentUs + 997'000);  // 3 ms early
  ledger.reserve(3, body_due_in(5000), kSentUs + 1'000'000);
  EXPECT_EQ(ledger.early(), 2u);
  EXPECT_EQ(ledger.early_ids(), (std::vector<std::uint64_t>{2, 3}));
  EXPECT_TRUE(ledger.complete());
}

TEST(JobsLedger, AnAcknowledgedJobNeverReservedIsLost) {
  JobsLedger ledger;
  ledger.acknowledge({30, 10, 20});
  ledger.reserve(20, body_due_in(0), kSentUs);
  EXPECT_FALSE(ledger.complete());
  EXPECT_EQ(ledger.lost(), 2u);
  EXPECT_EQ(ledger.lost_ids(10), (std::vector<std::uint64_t>{10, 30}));
  EXPECT_EQ(ledger.lost_ids(1), (std::vector<std::uint64_t>{10}));
}

TEST(JobsLedger, DuplicatesUnacknowledgedAndForeignJobsAreCountedApart) {
  JobsLedger ledger;
  ledger.acknowledge({1, 1});
  EXPECT_EQ(ledger.acknowledged(), 1u) << "an id acknowledged twice is one job";
  EXPECT_TRUE(ledger.reserve(1, body_due_in(0), kSentUs));
  ledger.reserve(1, body_due_in(0), kSentUs);
  ledger.reserve(9, body_due_in(0), kSentUs);  // a put in flight at a kill, logged after all
  ledger.reserve(10, "someone else's job", kSentUs);
  EXPECT_EQ(ledger.reserved(), 1u);
  EXPECT_EQ(ledger.duplicates(), 1u);
  EXPECT_EQ(ledger.unacknowledged(), 2u);
  EXPECT_EQ(ledger.without_header(), 1u);
  EXPECT_EQ(ledger.lateness_ms()->count, 3u) << "a job without a header is not timed";
}

TEST(JobsDemoConfigCheck, EachFieldIsRangeCheckedInPlainNumbers) {
  JobsDemoConfig c;
  c.wheel_jobs = WHEEL_JOBS_PATH;
  EXPECT_EQ(check_jobs_demo(c), "");
  c.jobs = 1;
  EXPECT_EQ(check_jobs_demo(c), "jobs must be from 2 to 1000000, got 1");
  c.jobs = 100;
  c.kill_after = 100;
  EXPECT_EQ(check_jobs_demo(c), "kill after must be from 1 to 99, got 100");
  c.kill_after = 0;  // half of the jobs
  c.delay_min_s = 6;
  EXPECT_EQ(check_jobs_demo(c), "delay max (s) must be from 6 to 3600, got 5");
  c.delay_min_s = 1;
  c.wheel_jobs.clear();
  EXPECT_EQ(check_jobs_demo(c), "the wheel-jobs program is not named");
}

JobsDemoConfig small_demo() {
  JobsDemoConfig c;
  c.wheel_jobs = WHEEL_JOBS_PATH;
  c.jobs = 600;
  c.connections = 3;
  c.delay_min_s = 1;
  c.delay_max_s = 2;
  c.kill_after = 300;
  c.lost_after = 3s;
  return c;
}

// Sends one request on a fresh connection and returns the first line of the answer.
std::string ask(std::uint16_t port, const std::string& request) {
  wheel_test::Client client(port);
  client.send(request);
  return client.line();
}

TEST(JobsDemo, PassesWhenEveryAcknowledgedJobComesBackOnTime) {
  const JobsDemoConfig c = small_demo();
  const JobsDemoResult r = run_jobs_demo(c);
  const std::string report = format_jobs_demo(c, r);
  EXPECT_TRUE(r.passed()) << report;
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.acknowledged, 600u);
  EXPECT_EQ(r.reserved, 600u);
  EXPECT_EQ(r.lost, 0u);
  EXPECT_EQ(r.early, 0u);
  EXPECT_GE(r.acknowledged_before_kill, 300u);
  EXPECT_LT(r.acknowledged_before_kill, 600u) << "the kill came after the last put";
  EXPECT_GE(r.held_after_restart, static_cast<std::int64_t>(r.acknowledged_before_kill));
  ASSERT_TRUE(r.lateness_ms.has_value());
  EXPECT_EQ(r.lateness_ms->count, r.reserved + r.unacknowledged_kept);
  EXPECT_EQ(r.work_dir, "") << "the scratch directory of a passing demo is removed";
  EXPECT_NE(report.find("result: OK"), std::string::npos) << report;
}

TEST(JobsDemo, FailsWhenAnAcknowledgedJobIsDeletedOutOfBand) {
  JobsDemoConfig c = small_demo();
  std::uint64_t deleted = 0;
  c.before_drain = [&](std::uint16_t port, const std::vector<std::uint64_t>& acknowledged) {
    deleted = acknowledged.front();
    EXPECT_EQ(ask(port, "delete " + std::to_string(deleted) + "\r\n"), "DELETED");
  };
  const JobsDemoResult r = run_jobs_demo(c);
  const std::string report = format_jobs_demo(c, r);
  EXPECT_FALSE(r.passed()) << report;
  EXPECT_EQ(r.lost, 1u) << report;
  EXPECT_EQ(r.lost_ids, (std::vector<std::uint64_t>{deleted}));
  EXPECT_EQ(r.early, 0u);
  EXPECT_NE(report.find("result: FAILED (1 lost, 0 early)"), std::string::npos) << report;
  ASSERT_NE(r.work_dir, "") << "a failed demo keeps its data and log";
  EXPECT_TRUE(std::filesystem::exists(r.work_dir + "/data.log"));
  std::filesystem::remove_all(r.work_dir);
}

TEST(JobsDemo, FailsWhenAJobIsReservedBeforeItsDueTime) {
  JobsDemoConfig c = small_demo();
  c.before_drain = [&](std::uint16_t port, const std::vector<std::uint64_t>&) {
    const std::int64_t now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                                    std::chrono::system_clock::now().time_since_epoch())
                                    .count();
    // Its body says "due in a minute"; it is put with no delay.
    const std::string body = make_job_body(100, now_us, 60'000, false);
    EXPECT_EQ(ask(port, "put 0 0 60 100\r\n" + body + "\r\n").rfind("INSERTED", 0), 0u);
  };
  const JobsDemoResult r = run_jobs_demo(c);
  const std::string report = format_jobs_demo(c, r);
  EXPECT_FALSE(r.passed()) << report;
  EXPECT_EQ(r.early, 1u) << report;
  EXPECT_EQ(r.lost, 0u);
  EXPECT_EQ(r.early_ids.size(), 1u);
  EXPECT_NE(report.find("result: FAILED (0 lost, 1 early)"), std::string::npos) << report;
  std::filesystem::remove_all(r.work_dir);
}

TEST(JobsDemoProgram, PrintsTheReportAndExitsZeroOnlyWhenItPasses) {
  const std::string program = WHEEL_JOBS_LOAD_PATH;
  const auto [status, out] = wheel_test::run_to_exit(
      program, std::string("demo --wheel-jobs ") + WHEEL_JOBS_PATH +
                   " --jobs 400 --connections 2 --delay-max 2 --lost-after 3s --log-level warn");
  EXPECT_EQ(status, 0) << out;
  EXPECT_NE(out.find("reserved: 400 of 400 acknowledged, 0 lost, 0 early"), std::string::npos)
      << out;
  EXPECT_NE(out.find("result: OK"), std::string::npos) << out;
  // A server that never answers: the demo fails with exit status 1, says why and keeps the
  // directory it was given.
  char pattern[] = "/tmp/wheel-jobs-demo-test-XXXXXX";
  const std::string dir = mkdtemp(pattern);
  const auto [bad, bad_out] = wheel_test::run_to_exit(
      program, "demo --wheel-jobs /bin/true --jobs 10 --log-level warn --work-dir " + dir);
  EXPECT_EQ(bad, 1) << bad_out;
  EXPECT_NE(bad_out.find("exited before serving"), std::string::npos) << bad_out;
  EXPECT_NE(bad_out.find("result: FAILED"), std::string::npos) << bad_out;
  std::filesystem::remove_all(dir);
  const auto [refused, refused_out] = wheel_test::run_to_exit(
      program, std::string("demo --wheel-jobs ") + WHEEL_JOBS_PATH + " --jobs 10 --kill-after 10");
  EXPECT_EQ(refused, 2) << refused_out;
  EXPECT_NE(refused_out.find("kill after must be from 1 to 9, got 10"), std::string::npos)
      << refused_out;
}

}  // namespace
}  // namespace wheel::load
