// SPDX-License-Identifier: Apache-2.0
// JobQueue's metrics (wheel/jobs/queue_metrics.h): delivery lateness of delayed jobs made late
// by a clock moved by hand, the wheel's own lateness, the ready wait, every kind of change
// counted once (and a refused change not at all), and the bounded choice of busiest tubes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "wheel/jobs/model/job_queue.h"

namespace wheel::jobs {
namespace {

using namespace std::chrono_literals;

std::size_t bucket_of(double seconds) {
  std::size_t i = 0;
  while (i < kLatenessBounds.size() && seconds > kLatenessBounds[i]) ++i;
  return i;
}

class Recorder : public ReserveListener {
 public:
  void on_reserve_done(SessionId, const ReserveResult& r) override {
    if (r.outcome == Outcome::kOk) served.push_back(r.job->id);
  }
  std::vector<std::uint64_t> served;
};

class QueueMetricsTest : public ::testing::Test {
 protected:
  QueueMetricsTest() { queue.set_listener(&events); }
  std::uint64_t put(Millis delay, Millis ttr = 60s) {
    PutResult r = queue.put(producer, 0, delay, ttr, "body");
    EXPECT_EQ(r.outcome, Outcome::kOk);
    return r.id;
  }
  std::uint64_t changes(ChangeCounter kind) const { return queue.metrics().change_count(kind); }

  Recorder events;
  JobQueue queue;
  SessionId producer = queue.open_session();
  SessionId worker = queue.open_session();
};

TEST_F(QueueMetricsTest, AJobDeliveredLateByTheClockCountsItsLateness) {
  // A worker waits; the job is due at 100 ms but the clock only gets to 130 ms.
  ASSERT_EQ(queue.reserve(worker, std::nullopt).outcome, Outcome::kWaiting);
  const std::uint64_t id = put(100ms);
  queue.advance(130ms);
  ASSERT_EQ(events.served, std::vector<std::uint64_t>{id});
  const auto late = queue.metrics().delivery_lateness.read();
  EXPECT_EQ(late.count(), 1u);
  EXPECT_EQ(late.buckets[bucket_of(0.030)], 1u) << "30 ms late";
  EXPECT_EQ(late.sum, 30'000'000u);
  const auto wheel = queue.metrics().delay_lateness.read();
  EXPECT_EQ(wheel.count(), 1u);
  EXPECT_EQ(wheel.sum, 30'000'000u) << "all of it the wheel's";
  const auto wait = queue.metrics().ready_wait.read();
  EXPECT_EQ(wait.count(), 1u);
  EXPECT_EQ(wait.sum, 0u) << "the waiting worker took it at once";
}

TEST_F(QueueMetricsTest, LatenessIncludesTheTimeNoWorkerTookTheJob) {
  const std::uint64_t id = put(10ms);
  queue.advance(10ms);  // made ready on time
  queue.advance(70ms);
  const ReserveResult r = queue.reserve(worker, 0ms);
  ASSERT_EQ(r.outcome, Outcome::kOk);
  ASSERT_EQ(r.job->id, id);
  EXPECT_EQ(queue.metrics().delay_lateness.read().sum, 0u);
  const auto late = queue.metrics().delivery_lateness.read();
  EXPECT_EQ(late.count(), 1u);
  EXPECT_EQ(late.sum, 60'000'000u);
  EXPECT_EQ(late.buckets[bucket_of(0.060)], 1u);
  EXPECT_EQ(queue.metrics().ready_wait.read().sum, 60'000'000u);
}

TEST_F(QueueMetricsTest, JobsNeverDelayedHaveAReadyWaitButNoLateness) {
  put(0ms);
  const std::uint64_t kicked = put(1h);
  ASSERT_EQ(queue.kick_job(kicked), Outcome::kOk);  // ready early: not late
  queue.advance(250ms);
  ASSERT_EQ(queue.reserve(worker, 0ms).outcome, Outcome::kOk);
  ASSERT_EQ(queue.reserve(worker, 0ms).outcome, Outcome::kOk);
  EXPECT_EQ(queue.metrics().delivery_lateness.read().count(), 0u);
  EXPECT_EQ(queue.metrics().delay_lateness.read().count(), 0u);
  const auto wait = queue.metrics().ready_wait.read();
  EXPECT_EQ(wait.count(), 2u);
  EXPECT_EQ(wait.buckets[bucket_of(0.250)], 2u);
  EXPECT_EQ(wait.sum, 500'000'000u);
}

TEST_F(QueueMetricsTest, AReleasedDelayIsLateFromItsNewDueTime) {
  const std::uint64_t id = put(0ms);
  ASSERT_EQ(queue.reserve(worker, 0ms).outcome, Outcome::kOk);
  ASSERT_EQ(queue.release(worker, id, 0, 1s), Outcome::kOk);  // due at 1 s
  queue.advance(1005ms);
  queue.advance(1020ms);
  ASSERT_EQ(queue.reserve(worker, 0ms).outcome, Outcome::kOk);
  const auto late = queue.metrics().delivery_lateness.read();
  EXPECT_EQ(late.count(), 1u);
  EXPECT_EQ(late.sum, 20'000'000u);
  EXPECT_EQ(queue.metrics().delay_lateness.read().sum, 5'000'000u);
}

TEST_F(QueueMetricsTest, EveryKindOfChangeIsCountedOnce) {
  const std::uint64_t a = put(0ms, 2s);
  ASSERT_EQ(queue.reserve(worker, 0ms).outcome, Outcome::kOk);
  ASSERT_EQ(queue.touch(worker, a), Outcome::kOk);
  ASSERT_EQ(queue.release(worker, a, 0, 10ms), Outcome::kOk);
  queue.advance(10ms);  // delay ended
  ASSERT_EQ(queue.reserve(worker, 0ms).outcome, Outcome::kOk);
  ASSERT_EQ(queue.bury(worker, a, 0), Outcome::kOk);
  ASSERT_EQ(queue.kick_job(a), Outcome::kOk);
  ASSERT_EQ(queue.reserve(worker, 0ms).outcome, Outcome::kOk);
  queue.advance(3s);  // TTR (2 s) runs out
  ASSERT_EQ(queue.reserve(worker, 0ms).outcome, Outcome::kOk);
  queue.close_session(worker);  // hang-up: back to ready
  const SessionId w2 = queue.open_session();
  ASSERT_EQ(queue.reserve(w2, 0ms).outcome, Outcome::kOk);
  ASSERT_EQ(queue.remove(w2, a), Outcome::kOk);
  EXPECT_EQ(changes(ChangeCounter::kPut), 1u);
  EXPECT_EQ(changes(ChangeCounter::kReserve), 5u);
  EXPECT_EQ(changes(ChangeCounter::kTouch), 1u);
  EXPECT_EQ(changes(ChangeCounter::kRelease), 1u);
  EXPECT_EQ(changes(ChangeCounter::kDelayEnded), 1u);
  EXPECT_EQ(changes(ChangeCounter::kBury), 1u);
  EXPECT_EQ(changes(ChangeCounter::kKick), 1u);
  EXPECT_EQ(changes(ChangeCounter::kTimeout), 1u);
  EXPECT_EQ(changes(ChangeCounter::kHangUp), 1u);
  EXPECT_EQ(changes(ChangeCounter::kDelete), 1u);
  EXPECT_EQ(change_counter_name(ChangeCounter::kPut), "put");
  EXPECT_EQ(change_counter_name(ChangeCounter::kReserve), "reserve");
  EXPECT_EQ(change_counter_name(ChangeCounter::kRelease), "release");
  EXPECT_EQ(change_counter_name(ChangeCounter::kBury), "bury");
  EXPECT_EQ(change_counter_name(ChangeCounter::kKick), "kick");
  EXPECT_EQ(change_counter_name(ChangeCounter::kDelete), "delete");
  EXPECT_EQ(change_counter_name(ChangeCounter::kTouch), "touch");
  EXPECT_EQ(change_counter_name(ChangeCounter::kDelayEnded), "delay_ended");
  EXPECT_EQ(change_counter_name(ChangeCounter::kTimeout), "timeout");
  EXPECT_EQ(change_counter_name(ChangeCounter::kHangUp), "hang_up");
  EXPECT_EQ(change_counter_name(static_cast<ChangeCounter>(kChangeCounters)), "unknown");
}

class RefusingJournal final : public QueueJournal {
 public:
  bool record(const JournalChange&) override { return false; }
  void when_durable(std::function<void()> done) override { done(); }
};

TEST(QueueMetricsJournalTest, ARefusedChangeIsNotCounted) {
  RefusingJournal journal;
  JobQueue queue({}, &journal);
  const SessionId s = queue.open_session();
  EXPECT_EQ(queue.put(s, 0, 0ms, 1s, "b").outcome, Outcome::kInternalError);
  EXPECT_EQ(queue.metrics().change_count(ChangeCounter::kPut), 0u);
}

TEST(QueueMetricsTubesTest, TheBusiestTubesAreChosenBoundedAndInOrder) {
  JobQueue queue;
  const SessionId s = queue.open_session();
  // 10,000 tubes; tube i holds i % 7 jobs.
  for (int i = 0; i < 10'000; ++i) {
    const std::string name = "t" + std::to_string(i);
    ASSERT_EQ(queue.use(s, name), Outcome::kOk);
    for (int j = 0; j < i % 7; ++j) ASSERT_EQ(queue.put(s, 0, 0ms, 1s, "b").outcome, Outcome::kOk);
  }
  const std::vector<const Tube*> top = queue.tubes_by_jobs(100);
  ASSERT_EQ(top.size(), 100u);
  for (const Tube* t : top) EXPECT_EQ(t->job_count(), 6u) << t->name();
  for (std::size_t i = 1; i < top.size(); ++i) {
    EXPECT_LT(top[i - 1]->name(), top[i]->name()) << "ties in name order";
  }
  EXPECT_EQ(top.front()->name(), "t1000");  // "t1000" < "t1007" < ... < "t13" by name
  EXPECT_TRUE(queue.tubes_by_jobs(0).empty());
  const std::size_t all = queue.counters().tubes;
  EXPECT_EQ(queue.tubes_by_jobs(all + 5).size(), all);
  const auto everything = queue.tubes_by_jobs(all);
  for (std::size_t i = 1; i < everything.size(); ++i) {
    EXPECT_GE(everything[i - 1]->job_count(), everything[i]->job_count());
  }
}

}  // namespace
}  // namespace wheel::jobs
