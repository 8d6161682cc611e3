// SPDX-License-Identifier: Apache-2.0
// A restart with many jobs (LogJournal::restore_into, JobQueue::restore): every tube comes back
// with the same orders — peek-delayed and kick take the delayed jobs by due time then id,
// peek-ready and reserve take the ready ones by priority then id — and the recovered jobs
// are handed over, not copied (Recovered::jobs is left empty).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "support/fault_injection_fs.h"
#include "wheel/jobs/job_queue.h"
#include "wheel/jobs/log_journal.h"

namespace wheel::jobs {
namespace {

using namespace std::chrono_literals;

struct Put {
  std::uint64_t id;
  std::string tube;
  std::uint32_t priority;
  std::int64_t due;  // wall ms; 0: ready
};

TEST(RestoreTest, ManyDelayedAndReadyJobsComeBackInTheSameOrders) {
  testing::FaultInjectionFs fs;
  JobLogOptions o;
  o.dir = "/data";
  o.sync = SyncPolicy::kNever;
  o.sync_thread = false;
  o.reserve_bytes = 0;
  o.segment_bytes = 64 << 10;  // many segments
  o.fs = &fs;
  std::int64_t wall = 1'700'000'000'000;
  std::vector<Put> puts;
  std::mt19937 rng(11);
  {
    Recovered r;
    std::string error;
    auto log = JobLog::open(o, &r, &error);
    ASSERT_TRUE(log) << error;
    LogJournal journal(*log, SyncPolicy::kNever, [&] { return wall; });
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
  Recovered r;
  std::string error;
  auto log = JobLog::open(o, &r, &error);
  ASSERT_TRUE(log) << error;
  ASSERT_EQ(r.jobs.size(), puts.size());
  JobQueue queue({}, nullptr, 1000ms);
  LogJournal::restore_into(queue, r, wall);
  EXPECT_TRUE(r.jobs.empty());
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

}  // namespace
}  // namespace wheel::jobs
