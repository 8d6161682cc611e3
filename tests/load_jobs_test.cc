// SPDX-License-Identifier: Apache-2.0
// wheel-jobs-load's client against real servers: wheel-jobs (this build), Debian's beanstalkd
// and redis-server, each started by JobsServer on a free port in a temporary directory. Counts
// are checked against what the server itself says it holds. Waits are bounded by the loads'
// stall timeouts and JobsServer's start timeout.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <filesystem>
#include <set>
#include <string>

#include "wheel/load/jobs_load.h"
#include "wheel/load/jobs_server.h"

namespace wheel::load {
namespace {

using namespace std::chrono_literals;

struct TempDir {
  TempDir() {
    char pattern[] = "/tmp/wheel-jobs-load-test-XXXXXX";
    path = mkdtemp(pattern);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string path;
};

JobsServerSpec spec_of(JobsServerKind kind, bool durable) {
  switch (kind) {
    case JobsServerKind::kWheelJobs:
      return {"wheel-jobs", kind, WHEEL_JOBS_PATH, durable, "always"};
    case JobsServerKind::kBeanstalkd:
      return {"beanstalkd", kind, WHEEL_BEANSTALKD_PATH, durable, "0"};
    case JobsServerKind::kRedis:
      return {"redis", kind, WHEEL_REDIS_SERVER_PATH, durable, "always"};
  }
  return {};
}

JobsLoadConfig load_for(const JobsServer& server) {
  JobsLoadConfig c;
  c.protocol = protocol_of(server.spec().kind);
  c.port = server.port();
  c.connections = 3;
  c.window = 16;
  c.stall_timeout = 60s;
  return c;
}

class JobsLoadAgainst : public ::testing::TestWithParam<JobsServerKind> {};

// Every acknowledged put is a job the server holds, with its own id; deletes remove exactly
// those, and a second delete of the same ids finds none of them.
TEST_P(JobsLoadAgainst, PutsAndDeletesAreWhatTheServerHolds) {
  TempDir tmp;
  JobsServer server(spec_of(GetParam(), true), tmp.path + "/data", 60s);
  EXPECT_EQ(server.held_at_start(), 0);
  JobsLoadConfig put = load_for(server);
  put.count = 2'000;
  const JobsLoadResult p = run_jobs_load(put);
  ASSERT_EQ(p.error, "");
  EXPECT_EQ(p.acknowledged, 2'000u);
  EXPECT_EQ(p.sent, 2'000u) << "a count run sends no more than it needs";
  EXPECT_EQ(p.error_replies, 0u) << p.first_error_reply;
  ASSERT_EQ(p.ids.size(), 2'000u);
  EXPECT_EQ(std::set<std::uint64_t>(p.ids.begin(), p.ids.end()).size(), 2'000u);
  ASSERT_TRUE(p.reply_ms.has_value());
  EXPECT_EQ(p.reply_ms->count, 2'000u);
  EXPECT_GT(p.per_second, 0);
  EXPECT_EQ(server.jobs_held(30s), 2'000);

  JobsLoadConfig del = load_for(server);
  del.phase = JobsPhase::kDelete;
  del.delete_ids.assign(p.ids.begin(), p.ids.begin() + 1'500);
  const JobsLoadResult d = run_jobs_load(del);
  ASSERT_EQ(d.error, "");
  EXPECT_EQ(d.acknowledged, 1'500u);
  EXPECT_EQ(d.not_found, 0u);
  EXPECT_EQ(server.jobs_held(30s), 500);
  const JobsLoadResult again = run_jobs_load(del);
  EXPECT_EQ(again.acknowledged, 0u);
  EXPECT_EQ(again.not_found, 1'500u);
  EXPECT_EQ(server.jobs_held(30s), 500);
}

// A duration run stops at its deadline and counts only what was acknowledged before it.
TEST_P(JobsLoadAgainst, DurationRunStopsAtItsDeadline) {
  TempDir tmp;
  JobsServer server(spec_of(GetParam(), false), tmp.path + "/data", 60s);
  JobsLoadConfig put = load_for(server);
  put.duration = 500ms;
  const JobsLoadResult p = run_jobs_load(put);
  ASSERT_EQ(p.error, "");
  EXPECT_GT(p.acknowledged, 0u);
  EXPECT_GE(p.elapsed_s, 0.49);  // to the deadline timer's run (libuv rounds to ms; may be late)
  EXPECT_LT(p.elapsed_s, 10.0);
  EXPECT_EQ(p.ids.size(), p.acknowledged);
  EXPECT_GE(server.jobs_held(30s), static_cast<std::int64_t>(p.acknowledged));
}

// After kill -9 the durable server comes back with every acknowledged job, and the restart is
// timed from the spawn to its first answer.
TEST_P(JobsLoadAgainst, RestartAfterKillServesTheJobsAgain) {
  TempDir tmp;
  JobsServer server(spec_of(GetParam(), true), tmp.path + "/data", 60s);
  JobsLoadConfig put = load_for(server);
  put.count = 500;
  ASSERT_EQ(run_jobs_load(put).acknowledged, 500u);
  EXPECT_GT(server.rss_bytes(), 0u);
  EXPECT_GT(server.dir_bytes(), 500u * 100u);
  const pid_t before = server.pid();
  const double s = server.restart_after_kill(60s);
  EXPECT_NE(server.pid(), before);
  EXPECT_GT(s, 0);
  EXPECT_EQ(s, server.serving_after_s());
  EXPECT_EQ(server.held_at_start(), 500);
  const int status = server.stop(30s);  // beanstalkd 1.12 dies of SIGTERM (143)
  EXPECT_TRUE(status == 0 || status == 128 + SIGTERM) << status;
}

INSTANTIATE_TEST_SUITE_P(Servers, JobsLoadAgainst,
                         ::testing::Values(JobsServerKind::kWheelJobs, JobsServerKind::kBeanstalkd,
                                           JobsServerKind::kRedis),
                         [](const auto& info) {
                           switch (info.param) {
                             case JobsServerKind::kWheelJobs:
                               return std::string("WheelJobs");
                             case JobsServerKind::kBeanstalkd:
                               return std::string("Beanstalkd");
                             default:
                               return std::string("Redis");
                           }
                         });

// Probes put with 1-2 s delays are each reserved once, after their due time (never more than
// a clock tick early), and timed; the reservers also take jobs that are not probes.
TEST(JobsLoadLateness, EveryProbeIsReservedAndTimedAgainstItsDueTime) {
  for (JobsServerKind kind : {JobsServerKind::kWheelJobs, JobsServerKind::kBeanstalkd}) {
    SCOPED_TRACE(kind == JobsServerKind::kWheelJobs ? "wheel-jobs" : "beanstalkd");
    TempDir tmp;
    JobsServer server(spec_of(kind, false), tmp.path + "/data", 60s);
    JobsLoadConfig other = load_for(server);
    other.count = 20;
    other.delay_min_s = other.delay_max_s = 1;
    ASSERT_EQ(run_jobs_load(other).acknowledged, 20u);
    JobsLoadConfig l = load_for(server);
    l.phase = JobsPhase::kLateness;
    l.connections = 2;
    l.probe_rate = 20;
    l.probe_span = 1s;
    l.delay_min_s = 1;
    l.delay_max_s = 2;
    l.duration = 30s;  // an upper bound: the run ends when every probe is back
    ASSERT_EQ(check_jobs_load(l), "");
    const JobsLoadResult r = run_jobs_load(l);
    ASSERT_EQ(r.error, "");
    EXPECT_GT(r.probes_put, 5u);
    EXPECT_EQ(r.probes_missing, 0u);
    ASSERT_TRUE(r.lateness_ms.has_value());
    EXPECT_EQ(r.lateness_ms->count, r.probes_put);
    EXPECT_GT(r.lateness_ms->min, -20.0) << "a probe counted as delivered before its due time";
    // Generous (the servers deliver within milliseconds; a busy machine may add a few hundred):
    // a due time taken too early, by a part of the 1-2 s delay, shows here.
    EXPECT_LT(r.lateness_ms->p50, 500.0);
    EXPECT_LT(r.elapsed_s, 29.0) << "the run waited for its deadline instead of the probes";
    EXPECT_EQ(r.others_reserved, 20u);
    EXPECT_EQ(server.jobs_held(30s), 0) << "every reserved job was deleted";
  }
}

TEST(JobsLoadErrors, NoServerIsAClearErrorNotAHang) {
  JobsLoadConfig c;
  c.port = 1;  // nothing listens on port 1 here
  c.count = 10;
  const JobsLoadResult r = run_jobs_load(c);
  EXPECT_NE(r.error.find("cannot connect to 127.0.0.1:1"), std::string::npos) << r.error;
  EXPECT_EQ(r.acknowledged, 0u);
}

TEST(JobsLoadErrors, AServerThatCannotStartIsNamedWithItsLog) {
  TempDir tmp;
  JobsServerSpec bad{"wheel-jobs bad fsync", JobsServerKind::kWheelJobs, WHEEL_JOBS_PATH, true,
                     "sometimes"};
  try {
    JobsServer server(bad, tmp.path + "/data", 30s);
    FAIL() << "a server that exits at once was taken as serving";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("wheel-jobs bad fsync exited before serving"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("--fsync"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace wheel::load
