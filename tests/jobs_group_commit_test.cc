// SPDX-License-Identifier: Apache-2.0
// Group commit with the sync thread: the changes appended while one fdatasync runs share the
// next one; nothing is durable before its sync returned; the wakeup comes from the sync thread.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>

#include "support/fault_injection_fs.h"
#include "support/job_log_on_fs.h"
#include "support/wait_until.h"
#include "wheel/jobs/log/job_log.h"
#include "wheel/logger.h"

namespace wheel::jobs {
namespace {

using namespace std::chrono_literals;
using testing::FaultInjectionFs;

TEST(GroupCommitTest, ChangesDuringOneSyncShareTheNext) {
  logger()->set_level(spdlog::level::off);
  FaultInjectionFs fs;
  std::atomic<int> wakeups{0};
  JobLogOptions o;
  o.dir = "/log";
  o.fs = &fs;
  o.reserve_bytes = 0;
  o.wakeup = [&] { ++wakeups; };
  Recovered r;
  std::string error;
  auto log = JobLog::open(o, &r, &error);
  ASSERT_TRUE(log) << error;
  std::vector<std::uint64_t> ids(100);
  for (auto& id : ids) ASSERT_FALSE(log->allocate_id(&id));  // the id lease syncs inline
  const auto before = log->stats();

  fs.set_sync_gate(false);
  JobLog::Lsn first = 0;
  StoredJob job;
  job.id = ids[0];
  ASSERT_FALSE(log->put(job, &first));
  log->commit();
  ASSERT_TRUE(wheel_test::wait_until([&] { return fs.syncs_waiting() == 1; }));
  JobLog::Lsn last = 0;
  for (std::size_t i = 1; i < ids.size(); ++i) {
    job.id = ids[i];
    ASSERT_FALSE(log->put(job, &last));
    log->commit();  // queued behind the sync in flight: no second sync starts
  }
  EXPECT_EQ(log->durable_lsn(), before.durable_lsn) << "nothing is durable before its sync";
  fs.set_sync_gate(true);
  ASSERT_TRUE(wheel_test::wait_until([&] { return log->durable_lsn() >= last; }));
  log->poll(0);
  const auto after = log->stats();
  EXPECT_EQ(after.syncs - before.syncs, 2u) << "one sync for the first, one for the other 99";
  EXPECT_EQ(after.synced_records - before.synced_records, 100u);
  // The sync thread calls `wakeup` after it has published the sync: the second call may
  // still be on its way when the LSN above is already durable.
  EXPECT_TRUE(wheel_test::wait_until([&] { return wakeups.load() >= 2; })) << wakeups.load();
  logger()->set_level(spdlog::level::info);
}

TEST(GroupCommitTest, SetWakeupReplacesTheWakeupAndTheOldOneIsNoLongerCalled) {
  // What a server does once the log is open: its own wake-up replaces the options' one.
  logger()->set_level(spdlog::level::off);
  FaultInjectionFs fs;
  std::atomic<int> first{0}, second{0}, third{0};
  JobLogOptions o;
  o.dir = "/log";
  o.fs = &fs;
  o.reserve_bytes = 0;
  o.wakeup = [&] { ++first; };
  Recovered r;
  std::string error;
  auto log = JobLog::open(o, &r, &error);
  ASSERT_TRUE(log) << error;
  StoredJob job;
  JobLog::Lsn lsn = 0;
  // Once set_wakeup() returned the old one is never called again: its count is final.
  log->set_wakeup([&] { ++second; });
  const int first_final = first.load();
  ASSERT_FALSE(log->allocate_id(&job.id));
  ASSERT_FALSE(log->put(job, &lsn));
  log->commit();
  EXPECT_TRUE(wheel_test::wait_until([&] { return second.load() >= 1; }));
  log->set_wakeup([&] { ++third; });
  const int second_final = second.load();
  ASSERT_FALSE(log->allocate_id(&job.id));
  ASSERT_FALSE(log->put(job, &lsn));
  log->commit();
  EXPECT_TRUE(wheel_test::wait_until([&] { return third.load() >= 1; }));
  EXPECT_EQ(first.load(), first_final);
  EXPECT_EQ(second.load(), second_final);
  logger()->set_level(spdlog::level::info);
}

// Not a test but the figure for docs/jobs.md: N submitter threads, each with one change in
// flight, against one owner thread on the real file system. Run with
// --gtest_also_run_disabled_tests --gtest_filter=*Measure*.
TEST(GroupCommitTest, IdsCostOneLeaseWriteNotSyncsOfTheirOwn) {
  // 20,000 ids in batches of 100, each batch committed (one fdatasync): one id lease (the
  // file, synced once) covers them all; no id waits for a sync of its own. The ids keep
  // growing across a reopen.
  logger()->set_level(spdlog::level::off);
  FaultInjectionFs fs;
  JobLogOptions o = testing::log_options(fs, JobLogOptions{}.segment_bytes);
  std::uint64_t last_id = 0;
  {
    Recovered r;
    auto log = testing::open_log(o, &r);
    ASSERT_TRUE(log);
    const std::uint64_t syncs_at_open = fs.file_syncs();
    int commits = 0;
    for (int batch = 0; batch < 200; ++batch) {
      for (int i = 0; i < 100; ++i) {
        StoredJob job;
        ASSERT_FALSE(log->allocate_id(&job.id));
        ASSERT_GT(job.id, last_id);
        last_id = job.id;
        JobLog::Lsn lsn = 0;
        ASSERT_FALSE(log->put(job, &lsn));
      }
      log->commit();
      ++commits;
    }
    EXPECT_EQ(fs.file_syncs() - syncs_at_open, static_cast<std::uint64_t>(commits) + 1)
        << "one sync per commit, plus the lease file's";
  }
  Recovered r;
  auto log = testing::open_log(o, &r);
  ASSERT_TRUE(log);
  EXPECT_EQ(r.jobs.size(), 20'000u);
  std::uint64_t id = 0;
  ASSERT_FALSE(log->allocate_id(&id));
  EXPECT_GT(id, last_id);
}

TEST(GroupCommitTest, DISABLED_MeasureChangesPerFdatasync) {
  logger()->set_level(spdlog::level::off);
  for (int submitters : {1, 8, 64}) {
    char tmpl[] = "/tmp/jobs_group_commit.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    std::mutex mu;
    std::condition_variable cv;
    bool synced = false;
    JobLogOptions o;
    o.dir = std::string(tmpl) + "/log";
    o.wakeup = [&] {
      std::lock_guard lock(mu);
      synced = true;
      cv.notify_all();
    };
    Recovered r;
    std::string error;
    auto log = JobLog::open(o, &r, &error);
    ASSERT_TRUE(log) << error;
    // Each submitter has one put in flight: the owner takes every waiting put, appends them,
    // commits once, and answers them when their sync is done.
    constexpr int kPerSubmitter = 400;
    std::vector<int> pending;  // submitter indices waiting for their put to be taken
    std::vector<std::atomic<int>> done(submitters);
    std::vector<std::thread> threads;
    std::atomic<bool> stop{false};
    for (int s = 0; s < submitters; ++s) {
      threads.emplace_back([&, s] {
        for (int k = 0; k < kPerSubmitter; ++k) {
          {
            std::lock_guard lock(mu);
            pending.push_back(s);
            cv.notify_all();
          }
          std::unique_lock lock(mu);
          cv.wait(lock, [&] { return done[s].load() > k || stop; });
        }
      });
    }
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::pair<int, JobLog::Lsn>> in_flight;
    int answered = 0;
    while (answered < submitters * kPerSubmitter) {
      std::vector<int> take;
      {
        std::unique_lock lock(mu);
        cv.wait_for(lock, 10ms, [&] { return !pending.empty() || synced; });
        take.swap(pending);
        synced = false;
      }
      for (int s : take) {
        StoredJob job;
        ASSERT_FALSE(log->allocate_id(&job.id));
        job.body = std::string(100, 'x');
        JobLog::Lsn lsn = 0;
        ASSERT_FALSE(log->put(job, &lsn));
        in_flight.emplace_back(s, lsn);
      }
      if (!take.empty()) log->commit();
      log->poll(0);
      const JobLog::Lsn durable = log->durable_lsn();
      std::lock_guard lock(mu);
      std::erase_if(in_flight, [&](const auto& p) {
        if (p.second > durable) return false;
        ++done[p.first];
        ++answered;
        return true;
      });
      cv.notify_all();
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    stop = true;
    cv.notify_all();
    for (auto& t : threads) t.join();
    const auto s = log->stats();
    std::printf("%d submitters: %d puts in %.2f s = %.0f puts/s, %llu syncs, %.1f puts per sync\n",
                submitters, answered, seconds, answered / seconds,
                static_cast<unsigned long long>(s.syncs), double(s.synced_records) / s.syncs);
    log.reset();
    std::filesystem::remove_all(tmpl);
  }
}

}  // namespace
}  // namespace wheel::jobs
