// SPDX-License-Identifier: Apache-2.0
// The job log out of file descriptors (EMFILE) when its head segment must rotate: a temporary
// state, not a failure. The spare descriptor absorbs one failed open; past it changes are
// refused (LogError::kNoDescriptors, OUT_OF_MEMORY to a client) and come back by themselves,
// without a restart, once opens work again; the last sync (SIGTERM's) succeeds, and nothing
// acknowledged is lost.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <string>

#include "support/fault_injection_fs.h"
#include "support/job_log_on_fs.h"
#include "wheel/jobs/log/job_log.h"
#include "wheel/logger.h"

namespace wheel::jobs {
namespace {

using testing::FaultInjectionFs;

class LogDescriptorsTest : public ::testing::Test {
 protected:
  void SetUp() override { logger()->set_level(spdlog::level::off); }
  void TearDown() override { logger()->set_level(spdlog::level::info); }
  // One put of a 200-byte job; its error.
  std::error_code put(JobLog& log, JobLog::Lsn* lsn) {
    PutRecord j;
    if (auto ec = log.allocate_id(&j.id)) return ec;
    j.tube = "default";
    j.body = std::string(200, 'x');
    if (auto ec = log.put(j, lsn)) return ec;
    log.commit();
    return {};
  }
  FaultInjectionFs fs_;
};

TEST_F(LogDescriptorsTest, ChangesAreRefusedWhileOpensFailAndResumeWithoutARestart) {
  const JobLogOptions o = testing::log_options(fs_, 4096);
  Recovered r;
  auto log = testing::open_log(o, &r);
  ASSERT_TRUE(log);
  JobLog::Lsn lsn = 0;
  ASSERT_FALSE(put(*log, &lsn));  // the id lease file is written (opened) before the shortage
  int acknowledged = 1;
  fs_.fail_opens(EMFILE, 1'000'000);
  std::uint64_t now = 1000;
  log->poll(now);
  std::error_code ec;
  for (int i = 0; i < 100 && !ec; ++i) {  // 4 KiB holds far fewer: the head must rotate
    if (!(ec = put(*log, &lsn))) ++acknowledged;
  }
  EXPECT_EQ(ec, LogError::kNoDescriptors);
  EXPECT_FALSE(log->failed());
  ASSERT_GT(acknowledged, 5);
  // Still refused, before and after a retry is due.
  EXPECT_EQ(put(*log, &lsn), LogError::kNoDescriptors);
  log->poll(now += 5000);
  EXPECT_EQ(put(*log, &lsn), LogError::kNoDescriptors);

  // Descriptors are free again: changes resume at the next retry, no restart.
  fs_.fail_opens(0, 0);
  log->poll(now += 5000);
  for (int i = 0; i < 50; ++i) {
    ASSERT_FALSE(put(*log, &lsn)) << "put " << i << " after the descriptors came back";
    ++acknowledged;
  }
  EXPECT_FALSE(log->failed());
  EXPECT_GT(log->stats().segments, 1u);
  EXPECT_FALSE(log->sync_now());  // the shutdown's sync: wheel-jobs then exits 0
  log.reset();
  Recovered again;
  ASSERT_TRUE(testing::open_log(o, &again));
  EXPECT_EQ(again.jobs.size(), static_cast<std::size_t>(acknowledged));
}

TEST_F(LogDescriptorsTest, TheSpareDescriptorAbsorbsOneFailedOpen) {
  const JobLogOptions o = testing::log_options(fs_, 4096);
  Recovered r;
  auto log = testing::open_log(o, &r);
  ASSERT_TRUE(log);
  JobLog::Lsn lsn = 0;
  ASSERT_FALSE(put(*log, &lsn));  // the id lease file is written (opened) first
  fs_.fail_opens(EMFILE, 1);      // the first open of a new segment fails; the retry works
  for (int i = 0; i < 60; ++i) ASSERT_FALSE(put(*log, &lsn)) << "put " << i;
  EXPECT_GT(log->stats().segments, 1u);
}

}  // namespace
}  // namespace wheel::jobs
