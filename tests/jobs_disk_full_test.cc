// SPDX-License-Identifier: Apache-2.0
// A full disk: changes are refused with LogError::kDiskFull and not applied, deletes keep
// working from the reserve, nothing acknowledged is lost, and writes resume when space returns.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <map>

#include "support/fault_injection_fs.h"
#include "support/job_log_on_fs.h"
#include "wheel/jobs/job_log.h"
#include "wheel/logger.h"

namespace wheel::jobs {
namespace {

using testing::FaultInjectionFs;

class DiskFullTest : public ::testing::Test {
 protected:
  void SetUp() override { logger()->set_level(spdlog::level::off); }
  void TearDown() override { logger()->set_level(spdlog::level::info); }
  JobLogOptions options() { return testing::log_options(fs_, 8192, 4096); }
  FaultInjectionFs fs_;
};

TEST_F(DiskFullTest, RefusesChangesKeepsDeletesAndResumes) {
  fs_.set_capacity(64 * 1024);
  std::map<std::uint64_t, std::string> acked;
  Recovered r;
  std::string error;
  auto log = JobLog::open(options(), &r, &error);
  ASSERT_TRUE(log) << error;
  std::error_code ec;
  JobLog::Lsn lsn = 0;
  for (int i = 0; i < 10000 && !ec; ++i) {
    StoredJob job;
    ec = log->allocate_id(&job.id);
    if (ec) break;
    job.body = "job " + std::to_string(i) + std::string(100, '.');
    ec = log->put(job, &lsn);
    log->commit();
    if (!ec) {
      ASSERT_GE(log->durable_lsn(), lsn);
      acked[job.id] = job.body;
    }
  }
  ASSERT_EQ(ec, LogError::kDiskFull) << ec.message();
  EXPECT_TRUE(log->disk_full());
  EXPECT_TRUE(log->stats().disk_full);
  EXPECT_GT(acked.size(), 100u);

  // Refused: new jobs and changes. Still served: deletes, from the reserve.
  StoredJob extra;
  if (!log->allocate_id(&extra.id)) {
    EXPECT_EQ(log->put(extra, &lsn), LogError::kDiskFull);
  }
  EXPECT_EQ(log->change({acked.begin()->first, StoredState::kBuried, 1, 0, {}}, &lsn),
            LogError::kDiskFull);
  for (int i = 0; i < 20; ++i) {
    const auto id = acked.begin()->first;
    ASSERT_FALSE(log->remove(id, &lsn)) << "delete " << i;
    log->commit();
    ASSERT_GE(log->durable_lsn(), lsn);
    acked.erase(id);
  }

  // Space comes back: after the next check, changes are accepted again.
  fs_.set_capacity(UINT64_MAX);
  log->poll(10'000);
  EXPECT_FALSE(log->disk_full());
  StoredJob after;
  ASSERT_FALSE(log->allocate_id(&after.id));
  after.body = "after";
  ASSERT_FALSE(log->put(after, &lsn));
  log->commit();
  acked[after.id] = after.body;
  ASSERT_FALSE(log->change({after.id, StoredState::kBuried, 1, 0, {}}, &lsn));
  log->commit();
  log.reset();

  // Nothing acknowledged lost, nothing refused applied, no half record left behind.
  log = JobLog::open(options(), &r, &error);
  ASSERT_TRUE(log) << error;
  EXPECT_EQ(r.torn_bytes, 0u);
  std::map<std::uint64_t, std::string> found;
  for (const auto& job : r.jobs) found[job.id] = job.body;
  EXPECT_EQ(found, acked);
  EXPECT_EQ(r.jobs.back().state, StoredState::kBuried);
  EXPECT_EQ(r.jobs.front().state, StoredState::kReady);  // the refused bury was not applied
}

TEST_F(DiskFullTest, StaysFullUntilTheReserveFitsAgain) {
  fs_.set_capacity(20 * 1024);
  Recovered r;
  std::string error;
  auto log = JobLog::open(options(), &r, &error);
  ASSERT_TRUE(log) << error;
  JobLog::Lsn lsn = 0;
  std::error_code ec;
  while (!ec) {
    StoredJob job;
    if ((ec = log->allocate_id(&job.id))) break;
    job.body = std::string(200, 'f');
    ec = log->put(job, &lsn);
  }
  ASSERT_TRUE(log->disk_full());
  log->poll(1'000'000);
  EXPECT_TRUE(log->disk_full()) << "no space came back";
  fs_.set_capacity(UINT64_MAX);
  log->poll(1'000'100);  // checked at most once a second
  EXPECT_TRUE(log->disk_full());
  log->poll(1'001'000);
  EXPECT_FALSE(log->disk_full());
}

}  // namespace
}  // namespace wheel::jobs
