// SPDX-License-Identifier: Apache-2.0
// JobQueue (wheel/jobs/job_queue.h): blocked reserves (order, TIMED_OUT, DEADLINE_SOON),
// pause-tube, the journal hook and restore. Time is moved by hand.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "wheel/jobs/model/job_queue.h"

namespace wheel::jobs {
namespace {

using namespace std::chrono_literals;

struct Ended {
  SessionId session;
  Outcome outcome;
  std::uint64_t job;
  bool operator==(const Ended&) const = default;
};

class Recorder : public ReserveListener {
 public:
  void on_reserve_done(SessionId session, const ReserveResult& r) override {
    ended.push_back({session, r.outcome, r.job == nullptr ? 0 : r.job->id});
  }
  std::vector<Ended> ended;
};

class JobQueueReserveTest : public ::testing::Test {
 protected:
  JobQueueReserveTest() { queue.set_listener(&events); }
  std::uint64_t put(SessionId s, std::uint32_t pri = 0, Millis delay = 0ms, Millis ttr = 60s) {
    PutResult r = queue.put(s, pri, delay, ttr, "body");
    EXPECT_EQ(r.outcome, Outcome::kOk);
    return r.id;
  }

  Recorder events;
  JobQueue queue;
  SessionId producer = queue.open_session();
  SessionId w1 = queue.open_session();
  SessionId w2 = queue.open_session();
};

TEST_F(JobQueueReserveTest, WaitersAreServedInTheOrderTheyCame) {
  EXPECT_EQ(queue.reserve(w2, std::nullopt).outcome, Outcome::kWaiting);
  EXPECT_EQ(queue.reserve(w1, std::nullopt).outcome, Outcome::kWaiting);
  EXPECT_EQ(queue.counters().waiting, 2u);
  EXPECT_EQ(queue.tube_stats("default")->waiting, 2u);
  std::uint64_t first = put(producer);
  ASSERT_EQ(events.ended, (std::vector<Ended>{{w2, Outcome::kOk, first}}));
  std::uint64_t second = put(producer);
  EXPECT_EQ(events.ended.back(), (Ended{w1, Outcome::kOk, second}));
  EXPECT_EQ(queue.counters().waiting, 0u);
  EXPECT_EQ(queue.peek(second)->reserver, w1);
}

TEST_F(JobQueueReserveTest, AWaiterOnAnotherTubeIsNotServed) {
  queue.watch(w1, "jobs");
  queue.ignore(w1, "default");
  queue.reserve(w1, std::nullopt);
  put(producer);
  EXPECT_TRUE(events.ended.empty());
  queue.use(producer, "jobs");
  std::uint64_t id = put(producer);
  EXPECT_EQ(events.ended, (std::vector<Ended>{{w1, Outcome::kOk, id}}));
}

TEST_F(JobQueueReserveTest, ReserveWithTimeoutEndsTimedOutAtTheMillisecond) {
  queue.advance(1000ms);
  EXPECT_EQ(queue.reserve(w1, 0ms).outcome, Outcome::kTimedOut);  // 0: at once
  EXPECT_EQ(queue.reserve(w1, 1500ms).outcome, Outcome::kWaiting);
  queue.advance(2499ms);
  EXPECT_TRUE(events.ended.empty());
  queue.advance(2500ms);
  EXPECT_EQ(events.ended, (std::vector<Ended>{{w1, Outcome::kTimedOut, 0}}));
  EXPECT_EQ(queue.counters().waiting, 0u);
  put(producer);  // nobody waits any more
  EXPECT_EQ(events.ended.size(), 1u);
}

TEST_F(JobQueueReserveTest, ADelayedJobEndsAWait) {
  std::uint64_t id = put(producer, 0, 300ms);
  queue.reserve(w1, 10s);
  queue.advance(300ms);
  EXPECT_EQ(events.ended, (std::vector<Ended>{{w1, Outcome::kOk, id}}));
}

TEST_F(JobQueueReserveTest, DeadlineSoonInTheLastSecondOfATtr) {
  std::uint64_t held = put(producer, 0, 0ms, 5s);
  ASSERT_EQ(queue.reserve(w1, 0ms).outcome, Outcome::kOk);
  // A blocked reserve with a reserved job: DEADLINE_SOON when the margin begins (4 s).
  EXPECT_EQ(queue.reserve(w1, std::nullopt).outcome, Outcome::kWaiting);
  queue.advance(3999ms);
  EXPECT_TRUE(events.ended.empty());
  queue.advance(4000ms);
  EXPECT_EQ(events.ended, (std::vector<Ended>{{w1, Outcome::kDeadlineSoon, 0}}));
  // In the margin a reserve answers DEADLINE_SOON at once...
  EXPECT_EQ(queue.reserve(w1, 10s).outcome, Outcome::kDeadlineSoon);
  // ...unless a job is ready: then the job.
  std::uint64_t other = put(producer);
  ReserveResult r = queue.reserve(w1, 10s);
  EXPECT_EQ(r.outcome, Outcome::kOk);
  EXPECT_EQ(r.job->id, other);
  EXPECT_EQ(queue.peek(held)->state, JobState::kReserved);
}

TEST_F(JobQueueReserveTest, ATimeoutBeforeTheMarginIsTimedOut) {
  put(producer, 0, 0ms, 10s);
  queue.reserve(w1, 0ms);
  queue.reserve(w1, 2s);
  queue.advance(2s);
  EXPECT_EQ(events.ended, (std::vector<Ended>{{w1, Outcome::kTimedOut, 0}}));
}

TEST_F(JobQueueReserveTest, PauseTubeHoldsReservesBackUntilItEnds) {
  std::uint64_t id = put(producer);
  EXPECT_EQ(queue.pause_tube("default", 2s), Outcome::kOk);
  EXPECT_EQ(queue.tube_stats("default")->pause, 2s);
  EXPECT_EQ(queue.reserve(w1, 0ms).outcome, Outcome::kTimedOut);
  EXPECT_EQ(queue.reserve(w1, std::nullopt).outcome, Outcome::kWaiting);
  queue.advance(1999ms);
  EXPECT_EQ(queue.tube_stats("default")->pause_time_left, 1ms);
  EXPECT_TRUE(events.ended.empty());
  queue.advance(2000ms);
  EXPECT_EQ(events.ended, (std::vector<Ended>{{w1, Outcome::kOk, id}}));
  EXPECT_EQ(queue.tube_stats("default")->cmd_pause_tube, 1u);
  EXPECT_EQ(queue.pause_tube("no-such-tube", 1s), Outcome::kNotFound);
}

// A clock read in whole milliseconds, truncated, is up to 1 ms behind: with that granularity
// every deadline a command starts (delay, pause, reserve timeout, TTR) ends 1 ms later on the
// hand-moved clock, so none ends before its time on the true one.
TEST_F(JobQueueReserveTest, ClockGranularityPushesEveryDeadlineOutByIt) {
  queue.set_clock_granularity(1ms);
  queue.advance(1000ms);
  const std::uint64_t delayed = put(producer, 0, 50ms, 1s);
  queue.advance(1050ms);
  EXPECT_EQ(queue.peek(delayed)->state, JobState::kDelayed);
  queue.advance(1051ms);
  EXPECT_EQ(queue.peek(delayed)->state, JobState::kReady);

  EXPECT_EQ(queue.pause_tube("default", 50ms), Outcome::kOk);  // paused until 1102
  EXPECT_EQ(queue.reserve(w1, std::nullopt).outcome, Outcome::kWaiting);
  EXPECT_EQ(queue.reserve(w2, 30ms).outcome, Outcome::kWaiting);  // times out at 1082
  queue.advance(1081ms);
  EXPECT_TRUE(events.ended.empty());
  queue.advance(1082ms);
  EXPECT_EQ(events.ended, (std::vector<Ended>{{w2, Outcome::kTimedOut, 0}}));
  queue.advance(1101ms);
  EXPECT_EQ(events.ended.size(), 1u);
  queue.advance(1102ms);  // w1 reserves the job: its TTR of 1 s ends at 2103
  EXPECT_EQ(events.ended.back(), (Ended{w1, Outcome::kOk, delayed}));

  EXPECT_EQ(queue.reserve(w2, std::nullopt).outcome, Outcome::kWaiting);
  queue.advance(2102ms);
  EXPECT_EQ(queue.peek(delayed)->state, JobState::kReserved);
  queue.advance(2103ms);
  EXPECT_EQ(events.ended.back(), (Ended{w2, Outcome::kOk, delayed}));
  EXPECT_THROW(queue.set_clock_granularity(-1ms), std::invalid_argument);
}

TEST_F(JobQueueReserveTest, ClosingAWaiterDropsItsWaitAndReleasesItsJobs) {
  std::uint64_t id = put(producer, 0, 0ms, 60s);
  queue.reserve(w1, 0ms);
  queue.reserve(w1, std::nullopt);
  queue.reserve(w2, std::nullopt);
  queue.close_session(w1);
  // Its job is ready again and goes to the next waiter.
  EXPECT_EQ(events.ended, (std::vector<Ended>{{w2, Outcome::kOk, id}}));
  EXPECT_EQ(queue.counters().waiting, 0u);
}

TEST_F(JobQueueReserveTest, TtrExpiryServesAWaiter) {
  std::uint64_t id = put(producer, 0, 0ms, 3s);
  queue.reserve(w1, 0ms);
  queue.reserve(w2, std::nullopt);
  queue.advance(3s);
  EXPECT_EQ(events.ended, (std::vector<Ended>{{w2, Outcome::kOk, id}}));
  EXPECT_EQ(queue.job_stats(id)->timeouts, 1u);
}

// A journal that records what it is told and can refuse.
class TestJournal : public QueueJournal {
 public:
  bool record(const JournalChange& c) override {
    if (refuse) return false;
    if (full) {
      last = Refusal::kFull;
      return false;
    }
    kinds.push_back(c.kind);
    ids.push_back(c.id);
    return true;
  }
  void when_durable(std::function<void()> done) override { done(); }
  Refusal last_refusal() const override { return last; }
  std::vector<ChangeKind> kinds;
  std::vector<std::uint64_t> ids;
  bool refuse = false;  // refuses with kFailed
  bool full = false;    // refuses with kFull
  Refusal last = Refusal::kFailed;
};

TEST(JobQueueJournalTest, EveryDurableChangeIsRecordedBeforeItHappens) {
  TestJournal journal;
  JobQueue queue({}, &journal);
  SessionId s = queue.open_session();
  std::uint64_t id = queue.put(s, 0, 0ms, 10s, "b").id;
  queue.reserve(s, 0ms);
  queue.touch(s, id);  // not durable
  queue.release(s, id, 1, 0ms);
  queue.reserve(s, 0ms);
  queue.bury(s, id, 2);
  queue.kick(s, 1);
  queue.remove(s, id);
  EXPECT_EQ(journal.kinds,
            (std::vector<ChangeKind>{ChangeKind::kPut, ChangeKind::kRelease, ChangeKind::kBury,
                                     ChangeKind::kKick, ChangeKind::kDelete}));
  journal.refuse = true;
  PutResult refused = queue.put(s, 0, 0ms, 10s, "c");
  EXPECT_EQ(refused.outcome, Outcome::kInternalError);
  EXPECT_EQ(queue.counters().total_jobs, 1u);
  journal.refuse = false;
  EXPECT_EQ(queue.put(s, 0, 0ms, 10s, "d").id, id + 2);  // the refused put's id stays unused
}

TEST(JobQueueJournalTest, ARefusedDeleteKeepsTheJob) {
  TestJournal journal;
  JobQueue queue({}, &journal);
  SessionId s = queue.open_session();
  std::uint64_t id = queue.put(s, 0, 0ms, 10s, "b").id;
  journal.refuse = true;
  EXPECT_EQ(queue.remove(s, id), Outcome::kInternalError);
  EXPECT_NE(queue.peek(id), nullptr);
}

TEST(JobQueueJournalTest, AFullJournalRefusesEveryChangeWithOutOfMemoryAndChangesNothing) {
  TestJournal journal;
  JobQueue queue({}, &journal);
  SessionId s = queue.open_session();
  const std::uint64_t held = queue.put(s, 5, 0ms, 10s, "held").id;
  const std::uint64_t buried = queue.put(s, 5, 0ms, 10s, "buried").id;
  ASSERT_EQ(queue.reserve_job(s, buried).outcome, Outcome::kOk);
  ASSERT_EQ(queue.bury(s, buried, 5), Outcome::kOk);
  ASSERT_EQ(queue.reserve(s, 0ms).job->id, held);
  journal.full = true;
  EXPECT_EQ(queue.put(s, 0, 0ms, 10s, "new").outcome, Outcome::kOutOfMemory);
  EXPECT_EQ(queue.release(s, held, 1, 0ms), Outcome::kOutOfMemory);
  EXPECT_EQ(queue.bury(s, held, 1), Outcome::kOutOfMemory);
  EXPECT_EQ(queue.kick_job(buried), Outcome::kOutOfMemory);
  EXPECT_EQ(queue.kick(s, 10), 0u);
  EXPECT_EQ(queue.remove(s, held), Outcome::kOutOfMemory);
  EXPECT_EQ(queue.peek(held)->state, JobState::kReserved);
  EXPECT_EQ(queue.peek(held)->priority, 5u);
  EXPECT_EQ(queue.peek(buried)->state, JobState::kBuried);
  EXPECT_EQ(queue.counters().total_jobs, 2u);
  journal.full = false;
  EXPECT_EQ(queue.release(s, held, 1, 0ms), Outcome::kOk);
}

TEST(JobQueueRestoreTest, RestoredJobsKeepIdsStatesAndDelays) {
  JobQueue queue({}, nullptr, 5000ms);
  queue.restore({7, "mail", 3, JobState::kDelayed, 250ms, 1s, 30s, "later"});
  queue.restore({4, "mail", 1, JobState::kBuried, 0ms, 0ms, 30s, "buried"});
  queue.restore({2, "mail", 9, JobState::kReady, 0ms, 0ms, 30s, "ready"});
  queue.restore({3, "mail", 9, JobState::kDelayed, -5ms, 0ms, 30s, "overdue"});
  EXPECT_THROW(queue.restore({2, "mail", 0, JobState::kReady, 0ms, 0ms, 1s, ""}),
               std::invalid_argument);
  EXPECT_THROW(queue.restore({9, "mail", 0, JobState::kReserved, 0ms, 0ms, 1s, ""}),
               std::invalid_argument);
  EXPECT_EQ(queue.next_id(), 8u);
  EXPECT_EQ(queue.peek(4)->state, JobState::kBuried);
  EXPECT_EQ(queue.peek(3)->state, JobState::kReady);  // overdue: ready at once
  EXPECT_EQ(queue.peek(7)->state, JobState::kDelayed);
  queue.advance(5250ms);
  EXPECT_EQ(queue.peek(7)->state, JobState::kReady);
  SessionId s = queue.open_session();
  queue.use(s, "mail");
  EXPECT_EQ(queue.put(s, 0, 0ms, 1s, "new").id, 8u);
  queue.watch(s, "mail");
  std::vector<std::uint64_t> order;
  for (int i = 0; i < 4; ++i) order.push_back(queue.reserve(s, 0ms).job->id);
  EXPECT_EQ(order, (std::vector<std::uint64_t>{8, 7, 2, 3}));  // priority, then id
}

}  // namespace
}  // namespace wheel::jobs
