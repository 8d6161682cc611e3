// SPDX-License-Identifier: Apache-2.0
// The job log's directory beside its segments: the lock (one log per directory, let go when
// the log closes) and the id lease file (ids never repeat, whatever happens to the segments).
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "support/fault_injection_fs.h"
#include "support/job_log_on_fs.h"
#include "wheel/jobs/log/job_log.h"
#include "wheel/logger.h"

namespace wheel::jobs {
namespace {

class LogDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    logger()->set_level(spdlog::level::off);
    char tmpl[] = "/tmp/jobs_log_dir_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::filesystem::remove_all(dir_);
    logger()->set_level(spdlog::level::info);
  }
  JobLogOptions options() {
    JobLogOptions o;
    o.dir = dir_ + "/log";
    o.reserve_bytes = 4096;
    return o;
  }
  std::uint64_t put_one(JobLog& log) {
    PutRecord job;
    EXPECT_FALSE(log.allocate_id(&job.id));
    job.tube = "default";
    job.body = "x";
    JobLog::Lsn lsn = 0;
    EXPECT_FALSE(log.put(job, &lsn));
    EXPECT_FALSE(log.sync_now());
    return job.id;
  }

  std::string dir_;
};

TEST_F(LogDirTest, ASecondLogOnTheSameDirectoryIsRefusedNamingItAndTheHoldersPid) {
  Recovered r;
  auto first = testing::open_log(options(), &r);
  ASSERT_TRUE(first);
  put_one(*first);
  const auto segments = std::filesystem::directory_iterator(dir_ + "/log");
  const std::size_t files = std::distance(segments, std::filesystem::directory_iterator());
  std::string error;
  Recovered second_r;
  EXPECT_FALSE(JobLog::open(options(), &second_r, &error));
  EXPECT_NE(error.find(dir_ + "/log is in use by another job log (pid " +
                       std::to_string(::getpid()) + ")"),
            std::string::npos)
      << error;
  // The second one touched nothing: no head segment of its own, and the first goes on.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_ + "/log"),
                          std::filesystem::directory_iterator()),
            static_cast<std::ptrdiff_t>(files));
  put_one(*first);
  EXPECT_FALSE(first->failed());
}

TEST_F(LogDirTest, TheLockIsLetGoWhenTheLogCloses) {
  std::uint64_t id = 0;
  for (int round = 0; round < 3; ++round) {
    Recovered r;
    auto log = testing::open_log(options(), &r);
    ASSERT_TRUE(log) << "round " << round;
    EXPECT_EQ(r.jobs.size(), static_cast<std::size_t>(round));
    const std::uint64_t next = put_one(*log);
    EXPECT_GT(next, id);
    id = next;
  }
  std::ifstream lock(dir_ + "/log/lock");
  std::string text((std::istreambuf_iterator<char>(lock)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "") << "the holder's pid is wiped when it lets go";
}

TEST_F(LogDirTest, TheFaultInjectingFileSystemLocksToo) {
  testing::FaultInjectionFs fs;
  const JobLogOptions o = testing::log_options(fs, 4096);
  Recovered r;
  std::string error;
  {
    auto first = testing::open_log(o, &r);
    ASSERT_TRUE(first);
    EXPECT_FALSE(JobLog::open(o, &r, &error));
    EXPECT_NE(error.find("/log is in use by another job log"), std::string::npos) << error;
  }
  EXPECT_TRUE(testing::open_log(o, &r));
}

TEST_F(LogDirTest, IdsContinueFromTheLeaseFile) {
  std::uint64_t last = 0;
  {
    Recovered r;
    auto log = testing::open_log(options(), &r);
    last = put_one(*log);
  }
  ASSERT_TRUE(std::filesystem::exists(dir_ + "/log/id.lease"));
  // Ids are handed out only below the lease: a start continues past all of them.
  for (const auto& e : std::filesystem::directory_iterator(dir_ + "/log")) {
    if (e.path().extension() == ".wjl") std::filesystem::remove(e.path());
  }
  Recovered r;
  auto log = testing::open_log(options(), &r);
  EXPECT_TRUE(r.jobs.empty());
  std::uint64_t id = 0;
  ASSERT_FALSE(log->allocate_id(&id));
  EXPECT_GT(id, last);
}

TEST_F(LogDirTest, WithoutALeaseFileIdsContinueFromTheSegments) {
  // A directory written before the lease file existed: the segments' limits still count.
  std::uint64_t last = 0;
  {
    Recovered r;
    auto log = testing::open_log(options(), &r);
    last = put_one(*log);
  }
  std::filesystem::remove(dir_ + "/log/id.lease");
  Recovered r;
  auto log = testing::open_log(options(), &r);
  std::uint64_t id = 0;
  ASSERT_FALSE(log->allocate_id(&id));
  EXPECT_GT(id, last);
}

TEST_F(LogDirTest, ADamagedLeaseFileStopsTheStartNamingIt) {
  std::uint64_t last = 0;
  {
    Recovered r;
    auto log = testing::open_log(options(), &r);
    last = put_one(*log);
  }
  const std::string lease = dir_ + "/log/id.lease";
  {
    std::fstream f(lease, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(10);
    f.put('!');
  }
  Recovered r;
  std::string error;
  EXPECT_FALSE(JobLog::open(options(), &r, &error));
  EXPECT_NE(error.find("damaged id lease " + lease), std::string::npos) << error;
  auto o = options();
  o.skip_corrupt = true;
  auto log = testing::open_log(o, &r);
  ASSERT_TRUE(log);
  std::uint64_t id = 0;
  ASSERT_FALSE(log->allocate_id(&id));
  EXPECT_GT(id, last);
}

TEST_F(LogDirTest, AFailedLeaseWriteRefusesIdsButNotTheLog) {
  // The disk is full when the first lease is to be written: no id is handed out, the log
  // itself goes on (deletes work), and ids come once the lease file can be written.
  testing::FaultInjectionFs fs;
  const JobLogOptions o = testing::log_options(fs, 4096);
  Recovered r;
  auto log = testing::open_log(o, &r);
  ASSERT_TRUE(log);
  fs.set_capacity(fs.used_bytes());
  std::uint64_t id = 0;
  EXPECT_EQ(log->allocate_id(&id), LogError::kDiskFull);
  EXPECT_FALSE(log->failed());
  fs.set_capacity(UINT64_MAX);
  EXPECT_FALSE(log->allocate_id(&id));
  EXPECT_EQ(id, 1u);
}

}  // namespace
}  // namespace wheel::jobs
