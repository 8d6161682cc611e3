// SPDX-License-Identifier: Apache-2.0
// The job log's thread (JobLog with JobLogOptions::sync_thread): the owner hands each batch to
// it and never waits in write() or fdatasync. With the fault-injecting file system frozen (every
// write and sync blocks, as `fsfreeze -f`): the owner's appends and commits return, bodies read
// back from the batches in the thread's hands, the age of the oldest unwritten change grows on
// the log's clock, changes_wait() turns true before the hand-off passes its bound, and after the
// thaw everything is written and synced.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <future>
#include <string>

#include "job_log_impl.h"
#include "support/fault_injection_fs.h"
#include "support/job_log_on_fs.h"
#include "support/wait_until.h"
#include "wheel/jobs/log/job_log.h"
#include "wheel/logger.h"

namespace wheel::jobs {
namespace {

using namespace std::chrono_literals;
using testing::FaultInjectionFs;

class LogThreadTest : public ::testing::Test {
 protected:
  void SetUp() override { logger()->set_level(spdlog::level::off); }
  void TearDown() override { logger()->set_level(spdlog::level::info); }
  JobLogOptions options() {
    JobLogOptions o = testing::log_options(fs_, 64u << 20);
    o.sync_thread = true;
    o.sync_clock = [this] { return std::chrono::nanoseconds(now_ns_.load()); };
    return o;
  }
  static PutRecord job(JobLog& log, std::size_t body) {
    PutRecord j;
    EXPECT_FALSE(log.allocate_id(&j.id));
    j.tube = "default";
    j.body = std::string(body, static_cast<char>('a' + j.id % 26));
    return j;
  }

  FaultInjectionFs fs_;
  std::atomic<std::int64_t> now_ns_{1'000'000'000};
};

TEST_F(LogThreadTest, AFrozenDiskNeverBlocksTheOwnerChangesWaitAtTheBoundAndTheAgeShows) {
  Recovered r;
  auto log = testing::open_log(options(), &r);
  ASSERT_TRUE(log);
  struct Thaw {  // before the log closes (which waits for its thread), also when an ASSERT fails
    FaultInjectionFs& fs;
    ~Thaw() { fs.set_frozen(false); }
  } thaw{fs_};
  JobLog::Lsn lsn = 0;
  const PutRecord first = job(*log, 100);
  ASSERT_FALSE(log->put(first, &lsn));
  log->commit();
  ASSERT_TRUE(wheel_test::wait_until([&] { return log->durable_lsn() >= lsn; }));
  log->poll(0);
  EXPECT_EQ(log->stats().oldest_unsynced_seconds, 0.0);

  fs_.set_frozen(true);
  // The owner's work runs on its own thread, so a planted write on the owner's thread fails
  // this test (the bounded wait below) instead of hanging it.
  struct Frozen {
    JobLog::Lsn lsn = 0;
    std::uint64_t puts = 0;
    std::uint64_t peak_backlog = 0;
    bool waited = false;
    std::string body;
  };
  auto owner = std::async(std::launch::async, [&] {
    Frozen f;
    const PutRecord held = job(*log, 100);
    if (log->put(held, &f.lsn)) return f;
    log->commit();
    log->read_body(held.id, &f.body);  // from the batch in the log thread's hands
    // Appends go on until the log says changes wait: never past the bound by more than a batch.
    while (!(f.waited = log->changes_wait()) && f.puts < 10'000) {
      JobLog::Lsn l = 0;
      if (log->put(job(*log, 4000), &l)) break;
      f.lsn = l;
      ++f.puts;
      log->commit();
      f.peak_backlog = std::max(f.peak_backlog, log->stats().backlog_bytes);
    }
    return f;
  });
  if (owner.wait_for(20s) != std::future_status::ready) {
    fs_.set_frozen(false);
    owner.wait();
    FAIL() << "the owner waited for the frozen disk";
  }
  Frozen f = owner.get();
  EXPECT_EQ(f.body, std::string(100, static_cast<char>('a' + (first.id + 1) % 26)));
  EXPECT_TRUE(f.waited) << "changes never waited after " << f.puts << " puts";
  EXPECT_LE(f.peak_backlog, kMaxBacklog + kMaxPending);
  EXPECT_LT(log->written_lsn(), f.lsn);
  EXPECT_LT(log->durable_lsn(), f.lsn);
  ASSERT_TRUE(wheel_test::wait_until([&] { return fs_.frozen_waiting() > 0; }));

  // The disk has been stuck for 5 s on the log's clock: both ages say so.
  now_ns_ += 5'000'000'000;
  JobLogStats s = log->stats();
  EXPECT_NEAR(s.oldest_unwritten_seconds, 5.0, 0.01);
  EXPECT_NEAR(s.oldest_unsynced_seconds, 5.0, 0.01);

  fs_.set_frozen(false);
  log->commit();
  ASSERT_TRUE(wheel_test::wait_until([&] { return log->durable_lsn() >= f.lsn; }));
  log->poll(0);
  s = log->stats();
  EXPECT_EQ(s.oldest_unwritten_seconds, 0.0);
  EXPECT_EQ(s.oldest_unsynced_seconds, 0.0);
  EXPECT_EQ(s.backlog_bytes, 0u);
  EXPECT_FALSE(log->changes_wait());
  EXPECT_FALSE(log->failed());
  log.reset();

  // Everything is in the log, in order.
  Recovered again;
  JobLogOptions o = options();
  o.sync_thread = false;
  auto reopened = testing::open_log(o, &again);
  ASSERT_TRUE(reopened);
  EXPECT_EQ(again.jobs.size(), f.puts + 2);
}

}  // namespace
}  // namespace wheel::jobs
