// SPDX-License-Identifier: Apache-2.0
// Compaction keeps the log under 2x the live records' bytes plus two segments under random
// workloads and under beanstalkd#622's pattern (one job released with a delay forever), while
// every change keeps being served, and the compacted log replays to the same jobs.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <map>
#include <random>

#include "support/fault_injection_fs.h"
#include "support/job_log_on_fs.h"
#include "wheel/jobs/log/job_log.h"
#include "wheel/logger.h"

namespace wheel::jobs {
namespace {

using testing::FaultInjectionFs;
constexpr std::uint64_t kSegment = 4096;

class CompactionTest : public ::testing::Test {
 protected:
  void SetUp() override { logger()->set_level(spdlog::level::off); }
  void TearDown() override { logger()->set_level(spdlog::level::info); }

  JobLogOptions options() { return testing::log_options(*fs_ptr_, kSegment); }
  std::unique_ptr<JobLog> open(Recovered* r) { return testing::open_log(options(), r); }
  // The bound, and that the log's own byte count is what is on disk.
  void check_bound(JobLog& log) {
    log.commit();  // the records gathered since the last batch reach the file
    const JobLogStats s = log.stats();
    ASSERT_LE(s.total_bytes, 2 * s.live_bytes + 2 * kSegment)
        << "live " << s.live_bytes << " segments " << s.segments;
    std::vector<std::string> names;
    fs_ptr_->list("/log", &names);
    std::uint64_t on_disk = 0;
    for (const auto& n : names) {  // the segments (not the id lease)
      if (n.ends_with(".wjl")) on_disk += fs_ptr_->contents("/log/" + n).size();
    }
    ASSERT_EQ(on_disk, s.total_bytes);
  }

  std::unique_ptr<FaultInjectionFs> fs_ptr_ = std::make_unique<FaultInjectionFs>();
  FaultInjectionFs& fs_ = *fs_ptr_;
};

TEST_F(CompactionTest, RandomWorkloadsStayUnderTheBoundAndReplayTheSame) {
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    fs_ptr_ = std::make_unique<FaultInjectionFs>();
    std::mt19937_64 rng(seed);
    std::map<std::uint64_t, PutRecord> model;
    std::uint64_t now = 0;
    {
      Recovered r;
      auto log = open(&r);
      for (int batch = 0; batch < 3000; ++batch) {
        for (int i = 0; i < 4; ++i) {
          const auto pick = rng() % 100;
          JobLog::Lsn lsn = 0;
          // Phases: grow, then churn, then mostly delete, then churn again.
          const int phase = batch / 750;
          const std::uint64_t put_share = phase == 0 ? 70 : phase == 2 ? 10 : 40;
          if (model.empty() || pick < put_share) {
            PutRecord job;
            ASSERT_FALSE(log->allocate_id(&job.id));
            job.body = std::string(rng() % 300, 'x');
            job.tube = "t";
            ASSERT_FALSE(log->put(job, &lsn));
            model[job.id] = job;
          } else {
            auto it = model.begin();
            std::advance(it, static_cast<long>(rng() % model.size()));
            if (pick % 2 == 0) {
              it->second.state = StoredState::kDelayed;
              it->second.due_unix_ms = static_cast<std::int64_t>(rng() % 100000);
              ASSERT_FALSE(log->change(
                  {it->first, it->second.state, it->second.priority, it->second.due_unix_ms, {}},
                  &lsn));
            } else {
              ASSERT_FALSE(log->remove(it->first, &lsn));
              model.erase(it);
            }
          }
        }
        log->commit();
        log->poll(now += 10);
        check_bound(*log);
      }
      EXPECT_GT(log->stats().compacted_segments, 10u);
    }
    Recovered r;
    open(&r);
    std::vector<PutRecord> want;
    for (auto& [id, job] : model) want.push_back(job);
    ASSERT_EQ(r.jobs, want) << "seed " << seed;
  }
}

TEST_F(CompactionTest, OneJobReleasedWithDelayForeverStaysBounded) {
  // beanstalkd#622: a job kept alive by release-with-delay pins its binlog file there.
  Recovered r;
  auto log = open(&r);
  PutRecord job;
  ASSERT_FALSE(log->allocate_id(&job.id));
  job.body = std::string(200, 'j');
  JobLog::Lsn lsn = 0;
  ASSERT_FALSE(log->put(job, &lsn));
  for (int i = 0; i < 100000; ++i) {
    ASSERT_FALSE(log->change({job.id, StoredState::kDelayed, 1, i, {}}, &lsn));
    log->commit();
    log->poll(static_cast<std::uint64_t>(i));
    if (i % 100 == 0) check_bound(*log);
  }
  check_bound(*log);
  log.reset();
  open(&r);
  ASSERT_EQ(r.jobs.size(), 1u);
  EXPECT_EQ(r.jobs[0].due_unix_ms, 99999);
  EXPECT_EQ(r.jobs[0].body, job.body);
}

TEST_F(CompactionTest, DeletingEverythingShrinksTheLogToTwoSegments) {
  Recovered r;
  auto log = open(&r);
  std::vector<std::uint64_t> ids;
  JobLog::Lsn lsn = 0;
  for (int i = 0; i < 2000; ++i) {
    PutRecord job;
    ASSERT_FALSE(log->allocate_id(&job.id));
    job.body = std::string(100, 'b');
    ASSERT_FALSE(log->put(job, &lsn));
    ids.push_back(job.id);
  }
  log->commit();
  log->poll(0);
  check_bound(*log);
  EXPECT_GT(log->stats().segments, 40u);
  for (auto id : ids) {
    ASSERT_FALSE(log->remove(id, &lsn));
    log->commit();
    log->poll(1);
    check_bound(*log);
  }
  EXPECT_LE(log->stats().total_bytes, 2 * kSegment);
  log.reset();
  open(&r);
  EXPECT_TRUE(r.jobs.empty());
  EXPECT_GT(r.next_id, ids.back());
}

}  // namespace
}  // namespace wheel::jobs
