// SPDX-License-Identifier: Apache-2.0
// A restart with many jobs (DurableJournal::restore_into and restore_deferred, JobQueue::restore,
// build_restored and add_restored): every tube comes back with the same orders — peek-delayed
// and kick take the delayed jobs by due time then id, peek-ready and reserve take the ready ones
// by priority then id — and the recovered jobs are handed over, not copied (Recovered::jobs is
// left empty, or never filled with JobLogOptions::defer_jobs). restore_deferred builds jobs on a
// helper thread: an error on either side stops both and reaches the caller, never a hang.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "support/fault_injection_fs.h"
#include "support/job_log_on_fs.h"
#include "wheel/jobs/durable/durable_journal.h"
#include "wheel/jobs/model/job_queue.h"
#include "wheel/logger.h"

namespace wheel::jobs {
namespace {

using namespace std::chrono_literals;

struct Put {
  std::uint64_t id;
  std::string tube;
  std::uint32_t priority;
  std::int64_t due;  // wall ms; 0: ready
};

enum class Path { kRestoreInto, kDeferred };

std::uint64_t jobs_in(const JobQueue& queue) {
  const QueueCounters c = queue.counters();
  return c.ready + c.delayed + c.buried + c.reserved;
}

// A log of 6,000 jobs in two tubes (many segments), some delayed with ties in due time.
class RestoreTest : public ::testing::TestWithParam<Path> {
 protected:
  void SetUp() override;

  testing::FaultInjectionFs fs;
  JobLogOptions o;
  std::int64_t wall = 1'700'000'000'000;
  std::vector<Put> puts;
};

void RestoreTest::SetUp() {
  logger()->set_level(spdlog::level::warn);
  o.dir = "/data";
  o.sync = SyncPolicy::kNever;
  o.sync_thread = false;
  o.reserve_bytes = 0;
  o.segment_bytes = 64 << 10;  // many segments
  o.fs = &fs;
  std::mt19937 rng(11);
  {
    Recovered r;
    std::string error;
    auto log = JobLog::open(o, &r, &error);
    ASSERT_TRUE(log) << error;
    DurableJournal journal(*log, SyncPolicy::kNever, [&] { return wall; });
    JobQueue queue({}, &journal);
    SessionId s = queue.open_session();
    for (int i = 0; i < 6000; ++i) {
      const std::string tube = i % 3 == 0 ? "b" : "a";
      queue.use(s, tube);
      const std::uint32_t priority = rng() % 5;
      const Millis delay = i % 4 == 0 ? 0ms : Millis(1 + rng() % 500);  // ties in due time
      PutResult put = queue.put(s, priority, delay, 30s, "body " + std::to_string(i));
      ASSERT_EQ(put.outcome, Outcome::kOk);
      puts.push_back({put.id, tube, priority, delay.count() > 0 ? wall + delay.count() : 0});
      if (i % 7 == 0) wall++;  // put times spread over the run
    }
    ASSERT_FALSE(log->sync_now());
  }
}

TEST_P(RestoreTest, ManyDelayedAndReadyJobsComeBackInTheSameOrders) {
  o.defer_jobs = GetParam() == Path::kDeferred;
  Recovered r;
  std::string error;
  auto log = JobLog::open(o, &r, &error);
  ASSERT_TRUE(log) << error;
  EXPECT_EQ(r.live_jobs, puts.size());
  // Memory only (the queue copies bodies) or on the journal (bodies read back from the log).
  DurableJournal journal(*log, SyncPolicy::kNever, [&] { return wall; });
  JobQueue queue({}, o.defer_jobs ? &journal : nullptr, 1000ms);
  if (o.defer_jobs) {
    EXPECT_TRUE(r.jobs.empty());
    journal.restore_deferred(queue, r, wall);
    EXPECT_EQ(log->take_recovered_jobs([](PutRecord&) { FAIL() << "taken twice"; }), 0u);
  } else {
    ASSERT_EQ(r.jobs.size(), puts.size());
    ASSERT_TRUE(std::is_sorted(r.jobs.begin(), r.jobs.end(),
                               [](const PutRecord& a, const PutRecord& b) { return a.id < b.id; }));
    DurableJournal::restore_into(queue, r, wall);
    EXPECT_TRUE(r.jobs.empty());
  }
  EXPECT_EQ(jobs_in(queue), puts.size());
  EXPECT_GT(queue.next_id(), puts.back().id);
  std::uint64_t body_bytes = 0;
  for (std::size_t i = 0; i < puts.size(); ++i) body_bytes += ("body " + std::to_string(i)).size();
  EXPECT_EQ(queue.counters().body_bytes, body_bytes);
  std::string scratch;
  EXPECT_EQ(queue.body(*queue.peek(puts[4321].id), scratch), "body 4321");

  for (const std::string tube : {"a", "b"}) {
    std::vector<Put> delayed, ready;
    for (const Put& p : puts) {
      if (p.tube != tube) continue;
      (p.due > wall ? delayed : ready).push_back(p);  // due by `wall`: ready at once
    }
    std::sort(delayed.begin(), delayed.end(), [](const Put& x, const Put& y) {
      return std::tie(x.due, x.id) < std::tie(y.due, y.id);
    });
    std::sort(ready.begin(), ready.end(), [](const Put& x, const Put& y) {
      return std::tie(x.priority, x.id) < std::tie(y.priority, y.id);
    });
    SessionId s = queue.open_session();
    queue.use(s, tube);
    queue.watch(s, tube);
    queue.ignore(s, "default");
    ASSERT_EQ(queue.tube_stats(tube)->delayed, delayed.size());
    ASSERT_EQ(queue.tube_stats(tube)->ready, ready.size());
    for (const Put& p : ready) {  // reserve by priority then id; delete to go on
      const Job* peeked = queue.peek_ready(s);
      ASSERT_NE(peeked, nullptr);
      ASSERT_EQ(peeked->id, p.id);
      ReserveResult got = queue.reserve(s, 0ms);
      ASSERT_EQ(got.outcome, Outcome::kOk);
      ASSERT_EQ(got.job->id, p.id);
      ASSERT_EQ(queue.remove(s, p.id), Outcome::kOk);
    }
    for (const Put& p : delayed) {  // peek-delayed and kick take the soonest, then the lower id
      const Job* peeked = queue.peek_delayed(s);
      ASSERT_NE(peeked, nullptr);
      ASSERT_EQ(peeked->id, p.id);
      ASSERT_EQ(peeked->deadline, 1000ms + Millis(p.due - wall));
      ASSERT_EQ(queue.kick(s, 1), 1u);
      ASSERT_EQ(queue.peek(p.id)->state, JobState::kReady);
    }
    EXPECT_EQ(queue.peek_delayed(s), nullptr);
    queue.close_session(s);
  }
}

INSTANTIATE_TEST_SUITE_P(Paths, RestoreTest, ::testing::Values(Path::kRestoreInto, Path::kDeferred),
                         [](const auto& info) {
                           return info.param == Path::kDeferred ? "Deferred" : "RestoreInto";
                         });

// The queue already holds job 3000 (a misuse): adding it again fails on the calling thread,
// which stops the helper; the error reaches the caller.
TEST_F(RestoreTest, AnErrorAddingAJobStopsTheHelperAndReachesTheCaller) {
  o.defer_jobs = true;
  Recovered r;
  auto log = testing::open_log(o, &r);
  ASSERT_TRUE(log);
  DurableJournal journal(*log, SyncPolicy::kNever, [&] { return wall; });
  JobQueue queue({}, &journal, 1000ms);
  RestoredJob twice;
  twice.id = puts[3000].id;
  twice.tube = "a";
  queue.restore(twice);
  EXPECT_THROW(journal.restore_deferred(queue, r, wall), std::invalid_argument);
  EXPECT_EQ(log->take_recovered_jobs([](PutRecord&) {}), 0u);  // the held bytes are freed
}

// A queue that keeps no bodies needs them loaded: building the first job fails on the helper
// thread and the error reaches the caller.
TEST_F(RestoreTest, AnErrorBuildingAJobReachesTheCaller) {
  o.defer_jobs = true;
  o.load_bodies = false;
  Recovered r;
  auto log = testing::open_log(o, &r);
  ASSERT_TRUE(log);
  DurableJournal journal(*log, SyncPolicy::kNever, [&] { return wall; });
  JobQueue queue({}, nullptr, 1000ms);
  EXPECT_THROW(journal.restore_deferred(queue, r, wall), std::invalid_argument);
  EXPECT_EQ(jobs_in(queue), 0u);
}

}  // namespace
}  // namespace wheel::jobs
