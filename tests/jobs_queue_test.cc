// SPDX-License-Identifier: Apache-2.0
// JobQueue (wheel/jobs/job_queue.h): commands and state transitions, priorities and FIFO,
// delays to the millisecond, TTR, kick bounds, ids, tubes, bounds and the journal. Time is
// moved by hand (advance); nothing waits. Blocked reserves are in jobs_queue_reserve_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "wheel/jobs/model/job_queue.h"

namespace wheel::jobs {
namespace {

using namespace std::chrono_literals;

class JobQueueTest : public ::testing::Test {
 protected:
  std::uint64_t put(SessionId s, std::uint32_t pri = 0, Millis delay = 0ms, Millis ttr = 60s,
                    std::string body = "x") {
    PutResult r = queue.put(s, pri, delay, ttr, std::move(body));
    EXPECT_EQ(r.outcome, Outcome::kOk);
    return r.id;
  }
  std::uint64_t reserve_now(SessionId s) {
    ReserveResult r = queue.reserve(s, 0ms);
    return r.outcome == Outcome::kOk ? r.job->id : 0;
  }
  JobState state(std::uint64_t id) { return queue.peek(id)->state; }

  JobQueue queue;
  SessionId a = queue.open_session();
  SessionId b = queue.open_session();
};

TEST_F(JobQueueTest, IdsStartAtOneAndGrowNeverReused) {
  std::uint64_t first = put(a);
  EXPECT_EQ(first, 1u);
  EXPECT_EQ(queue.remove(a, first), Outcome::kOk);
  EXPECT_EQ(put(a), 2u);
  queue.reserve_ids_below(100);
  EXPECT_EQ(put(a), 100u);
}

TEST_F(JobQueueTest, LowerPriorityFirstThenFifo) {
  std::uint64_t late = put(a, 5);
  std::uint64_t urgent = put(a, 1);
  std::uint64_t late2 = put(a, 5);
  EXPECT_EQ(reserve_now(b), urgent);
  EXPECT_EQ(reserve_now(b), late);
  EXPECT_EQ(reserve_now(b), late2);
  EXPECT_EQ(queue.reserve(b, 0ms).outcome, Outcome::kTimedOut);
}

TEST_F(JobQueueTest, OldestReadyIsTheJobReadyLongestWhateverItsPriority) {
  const Tube& tube = *queue.find_tube("default");
  EXPECT_EQ(queue.oldest_ready(tube), nullptr);
  const std::uint64_t old_low = put(a, 500);
  queue.advance(1000ms);
  const std::uint64_t new_high = put(a, 1);
  queue.advance(3000ms);
  EXPECT_EQ(tube.top_ready()->id, new_high);  // a reserve takes this one
  EXPECT_EQ(queue.oldest_ready(tube)->id, old_low);
  // Leaving ready and coming back makes a job new again.
  ASSERT_EQ(queue.reserve_job(b, old_low).outcome, Outcome::kOk);
  EXPECT_EQ(queue.oldest_ready(tube)->id, new_high);
  queue.advance(4000ms);
  ASSERT_EQ(queue.release(b, old_low, 500, 0ms), Outcome::kOk);
  EXPECT_EQ(queue.oldest_ready(tube)->id, new_high);
  EXPECT_EQ(queue.remove(a, new_high), Outcome::kOk);
  EXPECT_EQ(queue.oldest_ready(tube)->id, old_low);
  EXPECT_EQ(queue.oldest_ready(tube)->ready_since, 4000ms);
  // A delayed job counts from when it became ready.
  const std::uint64_t delayed = put(a, 0, 500ms);
  queue.advance(4500ms);
  EXPECT_EQ(queue.oldest_ready(tube)->id, old_low);
  EXPECT_EQ(queue.remove(a, old_low), Outcome::kOk);
  EXPECT_EQ(queue.oldest_ready(tube)->id, delayed);
  EXPECT_EQ(queue.remove(a, delayed), Outcome::kOk);
  EXPECT_EQ(queue.oldest_ready(tube), nullptr);
}

TEST_F(JobQueueTest, OldestReadyMarksStayWithinTwiceTheReadyJobs) {
  const Tube& tube = *queue.find_tube("default");
  const std::uint64_t waiting = put(a, 1000);  // never taken: the others go first
  for (int i = 0; i < 10'000; ++i) {
    queue.advance(Millis(i));
    put(a, 1);
    ASSERT_LE(tube.ready_marks.size(), 2 * tube.ready.size() + 64);
    const std::uint64_t id = reserve_now(b);
    ASSERT_NE(id, waiting);
    ASSERT_EQ(queue.remove(b, id), Outcome::kOk);
  }
  EXPECT_EQ(queue.oldest_ready(tube)->id, waiting);
}

TEST_F(JobQueueTest, ATubeWithoutReadyJobsHoldsNoReadyMarkMemory) {
  ASSERT_EQ(queue.use(a, "empty"), Outcome::kOk);
  const Tube& empty = *queue.find_tube("empty");
  EXPECT_EQ(empty.ready_marks.capacity(), 0u);
  const std::uint64_t id = put(a, 1);
  EXPECT_EQ(queue.oldest_ready(empty)->id, id);
  EXPECT_EQ(reserve_now(b), 0u);  // b watches "default" only
  ASSERT_EQ(queue.watch(b, "empty"), Outcome::kOk);
  ASSERT_EQ(reserve_now(b), id);
  EXPECT_EQ(queue.oldest_ready(empty), nullptr);
  EXPECT_EQ(empty.ready_marks.capacity(), 0u);  // read past, given back
}

TEST(ReadyMarksTest, IsFirstInFirstOutAcrossCompactions) {
  ReadyMarks marks;
  std::uint64_t next_in = 0, next_out = 0;
  for (int round = 0; round < 50; ++round) {
    for (int i = 0; i < 97; ++i, ++next_in) marks.push_back({Millis(next_in), next_in});
    for (int i = 0; i < 89; ++i, ++next_out) {
      ASSERT_EQ(marks.front().id, next_out);
      ASSERT_EQ(marks.at(0).since, Millis(next_out));
      marks.pop_front();
    }
    ASSERT_EQ(marks.size(), next_in - next_out);
    // Compaction keeps what was read past at most about half of what is held.
    ASSERT_LE(marks.capacity(), 4 * marks.size() + 256);
  }
  while (!marks.empty()) {
    ASSERT_EQ(marks.front().id, next_out++);
    marks.pop_front();
  }
  EXPECT_EQ(next_out, next_in);
  EXPECT_EQ(marks.capacity(), 0u);
}

TEST_F(JobQueueTest, ReserveAcrossWatchedTubesTakesLowestPriorityThenOldest) {
  ASSERT_EQ(queue.use(a, "t1"), Outcome::kOk);
  std::uint64_t t1 = put(a, 3);
  ASSERT_EQ(queue.use(a, "t2"), Outcome::kOk);
  std::uint64_t t2 = put(a, 3);
  std::uint64_t t2u = put(a, 2);
  EXPECT_EQ(queue.watch(b, "t1"), Outcome::kOk);
  EXPECT_EQ(queue.watch(b, "t2"), Outcome::kOk);
  EXPECT_EQ(reserve_now(b), t2u);
  EXPECT_EQ(reserve_now(b), t1);
  EXPECT_EQ(reserve_now(b), t2);
}

TEST_F(JobQueueTest, UnwatchedTubesAreNotReserved) {
  ASSERT_EQ(queue.use(a, "other"), Outcome::kOk);
  put(a);
  EXPECT_EQ(queue.reserve(b, 0ms).outcome, Outcome::kTimedOut);
}

TEST_F(JobQueueTest, DelayEndsExactlyAtTheMillisecond) {
  std::uint64_t id = put(a, 0, 250ms);
  EXPECT_EQ(state(id), JobState::kDelayed);
  EXPECT_EQ(queue.next_due(), Millis{250});
  queue.advance(249ms);
  EXPECT_EQ(state(id), JobState::kDelayed);
  EXPECT_EQ(queue.reserve(b, 0ms).outcome, Outcome::kTimedOut);
  queue.advance(250ms);
  EXPECT_EQ(state(id), JobState::kReady);
  EXPECT_EQ(reserve_now(b), id);
}

// Delays from 1 s to 3 days on the queue's wheel (levels cascade), driven the way a server
// drives it: sleep until next_due(), advance to it. After every step each job is ready exactly
// when its due millisecond has come, never a millisecond early or late, and next_due() never
// names a time after a pending deadline.
TEST_F(JobQueueTest, EveryDelayFrom1sTo3DaysEndsAtItsMillisecondUnderANextDueDriver) {
  std::mt19937_64 rng(19);
  std::uniform_int_distribution<std::int64_t> pick(1'000, 3 * 86'400'000);
  std::vector<std::pair<Millis, std::uint64_t>> due;
  for (int i = 0; i < 400; ++i) {
    const Millis delay(pick(rng));
    due.emplace_back(delay, put(a, 0, delay));
  }
  std::sort(due.begin(), due.end());
  std::size_t ready = 0;
  for (int steps = 0; steps < 100'000 && ready < due.size(); ++steps) {
    std::optional<Millis> next = queue.next_due();
    ASSERT_TRUE(next.has_value());
    ASSERT_LE(*next, due[ready].first) << "next_due() after a pending deadline";
    queue.advance(*next);
    while (ready < due.size() && due[ready].first <= queue.now()) ++ready;
    for (std::size_t i = 0; i < due.size(); ++i) {
      ASSERT_EQ(state(due[i].second), i < ready ? JobState::kReady : JobState::kDelayed)
          << "job due at " << due[i].first.count() << " ms, now " << queue.now().count();
    }
  }
  EXPECT_EQ(ready, due.size());
  EXPECT_FALSE(queue.next_due().has_value());
}

TEST_F(JobQueueTest, DelayedJobsBecomeReadyInDueOrder) {
  std::uint64_t later = put(a, 0, 30ms);
  std::uint64_t sooner = put(a, 9, 10ms);
  queue.advance(20ms);
  EXPECT_EQ(state(sooner), JobState::kReady);
  EXPECT_EQ(state(later), JobState::kDelayed);
  EXPECT_EQ(queue.peek_delayed(a)->id, later);
}

TEST_F(JobQueueTest, TtrExpiryReturnsTheJobToReady) {
  std::uint64_t id = put(a, 0, 0ms, 1500ms);
  EXPECT_EQ(reserve_now(b), id);
  EXPECT_EQ(state(id), JobState::kReserved);
  queue.advance(1499ms);
  EXPECT_EQ(state(id), JobState::kReserved);
  queue.advance(1500ms);
  EXPECT_EQ(state(id), JobState::kReady);
  EXPECT_EQ(queue.job_stats(id)->timeouts, 1u);
  EXPECT_EQ(queue.counters().job_timeouts, 1u);
  // The former holder can no longer act on it.
  EXPECT_EQ(queue.release(b, id, 0, 0ms), Outcome::kNotFound);
}

TEST_F(JobQueueTest, TtrZeroBecomesOneSecondAndDecimalsKeepMilliseconds) {
  std::uint64_t zero = put(a, 0, 0ms, 0ms);
  std::uint64_t half = put(a, 0, 0ms, 500ms);
  EXPECT_EQ(queue.peek(zero)->ttr, 1000ms);
  EXPECT_EQ(queue.peek(half)->ttr, 500ms);
}

TEST_F(JobQueueTest, TouchRestartsTheTtr) {
  std::uint64_t id = put(a, 0, 0ms, 2s);
  reserve_now(b);
  queue.advance(1500ms);
  EXPECT_EQ(queue.touch(b, id), Outcome::kOk);
  queue.advance(3000ms);
  EXPECT_EQ(state(id), JobState::kReserved);
  queue.advance(3500ms);
  EXPECT_EQ(state(id), JobState::kReady);
  EXPECT_EQ(queue.touch(b, id), Outcome::kNotFound);
}

TEST_F(JobQueueTest, ReleaseWithNewPriorityAndDelay) {
  std::uint64_t id = put(a, 5);
  reserve_now(b);
  EXPECT_EQ(queue.release(a, id, 1, 0ms), Outcome::kNotFound);  // not a's
  EXPECT_EQ(queue.release(b, id, 1, 100ms), Outcome::kOk);
  EXPECT_EQ(state(id), JobState::kDelayed);
  EXPECT_EQ(queue.peek(id)->priority, 1u);
  queue.advance(100ms);
  EXPECT_EQ(state(id), JobState::kReady);
  auto stats = queue.job_stats(id);
  EXPECT_EQ(stats->releases, 1u);
  EXPECT_EQ(stats->reserves, 1u);
  EXPECT_EQ(stats->delay, 100ms);
}

TEST_F(JobQueueTest, DeleteRulesFollowBeanstalkd) {
  std::uint64_t ready = put(a);
  std::uint64_t delayed = put(a, 0, 5s);
  std::uint64_t reserved = put(a, 0);
  EXPECT_EQ(queue.reserve_job(b, reserved).outcome, Outcome::kOk);
  EXPECT_EQ(queue.remove(a, reserved), Outcome::kNotFound);  // reserved by b
  EXPECT_EQ(queue.remove(b, reserved), Outcome::kOk);
  EXPECT_EQ(queue.remove(b, ready), Outcome::kOk);
  EXPECT_EQ(queue.remove(b, delayed), Outcome::kOk);
  EXPECT_EQ(queue.remove(b, delayed), Outcome::kNotFound);
  EXPECT_EQ(queue.peek(ready), nullptr);
  EXPECT_EQ(queue.tube_stats("default")->cmd_delete, 3u);
  EXPECT_FALSE(queue.next_due().has_value());  // the delay's timeout went with it
}

TEST_F(JobQueueTest, BuryAndKickBuriedFirstWithinTheBound) {
  std::vector<std::uint64_t> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(put(a, 7));
  std::uint64_t delayed = put(a, 0, 10s);
  for (std::uint64_t id : ids) {
    ASSERT_EQ(reserve_now(b), id);
    ASSERT_EQ(queue.bury(b, id, 8), Outcome::kOk);
  }
  EXPECT_EQ(queue.peek_buried(a)->id, ids[0]);
  EXPECT_EQ(queue.kick(a, 2), 2u);  // buried only, oldest first, two of them
  EXPECT_EQ(state(ids[0]), JobState::kReady);
  EXPECT_EQ(state(ids[1]), JobState::kReady);
  EXPECT_EQ(state(ids[2]), JobState::kBuried);
  EXPECT_EQ(state(delayed), JobState::kDelayed);
  EXPECT_EQ(queue.kick(a, 5), 1u);  // the last buried one; delayed untouched
  EXPECT_EQ(state(delayed), JobState::kDelayed);
  EXPECT_EQ(queue.kick(a, 5), 1u);  // no buried: the delayed one
  EXPECT_EQ(state(delayed), JobState::kReady);
  EXPECT_EQ(queue.kick(a, 5), 0u);
  EXPECT_EQ(queue.job_stats(ids[0])->buries, 1u);
  EXPECT_EQ(queue.job_stats(ids[0])->kicks, 1u);
  EXPECT_EQ(queue.peek(ids[0])->priority, 8u);
}

TEST_F(JobQueueTest, KickJobTakesBuriedOrDelayedOnly) {
  std::uint64_t delayed = put(a, 0, 10s);
  std::uint64_t ready = put(a);
  EXPECT_EQ(queue.kick_job(ready), Outcome::kNotFound);
  EXPECT_EQ(queue.kick_job(delayed), Outcome::kOk);
  EXPECT_EQ(state(delayed), JobState::kReady);
  EXPECT_EQ(queue.kick_job(12345), Outcome::kNotFound);
}

TEST_F(JobQueueTest, ReserveJobTakesAnyStateButReserved) {
  std::uint64_t buried = put(a);
  reserve_now(b);
  queue.bury(b, buried, 0);
  std::uint64_t delayed = put(a, 0, 10s);
  EXPECT_EQ(queue.reserve_job(a, buried).outcome, Outcome::kOk);
  EXPECT_EQ(queue.reserve_job(a, delayed).outcome, Outcome::kOk);
  EXPECT_EQ(queue.reserve_job(b, delayed).outcome, Outcome::kNotFound);
  EXPECT_EQ(queue.reserve_job(b, 999).outcome, Outcome::kNotFound);
}

TEST_F(JobQueueTest, PeeksLookAtTheUsedTube) {
  EXPECT_EQ(queue.peek_ready(a), nullptr);
  std::uint64_t r1 = put(a, 5);
  std::uint64_t r0 = put(a, 4);
  EXPECT_EQ(queue.peek_ready(a)->id, r0);
  queue.use(b, "elsewhere");
  EXPECT_EQ(queue.peek_ready(b), nullptr);
  std::string scratch;
  EXPECT_EQ(queue.body(*queue.peek(r1), scratch), "x");
}

TEST_F(JobQueueTest, TubesComeAndGoAsBeanstalkds) {
  EXPECT_EQ(queue.tube_names(), std::vector<std::string_view>{"default"});
  queue.use(a, "t");
  EXPECT_NE(queue.find_tube("t"), nullptr);
  std::uint64_t id = put(a);
  queue.use(a, "default");
  EXPECT_NE(queue.find_tube("t"), nullptr);  // it holds a job
  queue.remove(a, id);
  EXPECT_EQ(queue.find_tube("t"), nullptr);  // unused and empty
  queue.watch(b, "w");
  EXPECT_NE(queue.find_tube("w"), nullptr);
  queue.ignore(b, "w");
  EXPECT_EQ(queue.find_tube("w"), nullptr);
  queue.ignore(b, "never-watched");  // nothing (the replies are the front's: SessionTubes)
  EXPECT_EQ(queue.session(b)->watched.size(), 1u);
  EXPECT_NE(queue.find_tube("default"), nullptr);  // never dropped
}

// A session that uses and watches the same tube names it twice; closing it drops the tube once
// (the second look at it was a use after free, seen by ASan in the protocol suite).
TEST_F(JobQueueTest, ClosingASessionThatUsesAndWatchesOneTubeDropsItOnce) {
  const SessionId c = queue.open_session();
  queue.use(c, "same");
  queue.watch(c, "same");
  queue.close_session(c);
  EXPECT_EQ(queue.find_tube("same"), nullptr);
  EXPECT_EQ(queue.tube_names(), std::vector<std::string_view>{"default"});
}

TEST_F(JobQueueTest, TubeNamesKeepCreationOrder) {
  for (const char* tube : {"zeta", "alpha", "mid", "beta"}) queue.watch(a, tube);
  using Names = std::vector<std::string_view>;
  EXPECT_EQ(queue.tube_names(), (Names{"default", "zeta", "alpha", "mid", "beta"}));
  queue.ignore(a, "alpha");  // dropped: the others keep their order
  EXPECT_EQ(queue.tube_names(), (Names{"default", "zeta", "mid", "beta"}));
  queue.use(b, "alpha");  // new again: last
  queue.ignore(a, "zeta");
  EXPECT_EQ(queue.tube_names(), (Names{"default", "mid", "beta", "alpha"}));
}

TEST_F(JobQueueTest, StatsCountJobsPerStateAndTube) {
  queue.use(a, "t");
  put(a, 1);
  put(a, 2000);
  put(a, 0, 5s);
  queue.watch(b, "t");
  reserve_now(b);
  auto tube = queue.tube_stats("t");
  EXPECT_EQ(tube->urgent, 0u);
  EXPECT_EQ(tube->ready, 1u);
  EXPECT_EQ(tube->reserved, 1u);
  EXPECT_EQ(tube->delayed, 1u);
  EXPECT_EQ(tube->total_jobs, 3u);
  EXPECT_EQ(tube->using_count, 1u);
  EXPECT_EQ(tube->watching, 1u);
  // The whole server's: (ready, reserved, delayed, total jobs, sessions, producers, workers).
  const QueueCounters c = queue.counters();
  EXPECT_EQ(
      std::tuple(c.ready, c.reserved, c.delayed, c.total_jobs, c.sessions, c.producers, c.workers),
      std::tuple(1u, 1u, 1u, 3u, 2u, 1u, 1u));
  queue.advance(2s);
  auto job = queue.job_stats(3);
  EXPECT_EQ(job->age, 2s);
  EXPECT_EQ(job->time_left, 3s);
}

TEST_F(JobQueueTest, DrainingRefusesPutsOnly) {
  std::uint64_t id = put(a);
  queue.set_draining(true);
  EXPECT_EQ(queue.put(a, 0, 0ms, 1s, "y").outcome, Outcome::kDraining);
  EXPECT_EQ(reserve_now(b), id);
}

TEST_F(JobQueueTest, DisconnectReleasesReservedJobs) {
  std::uint64_t id = put(a, 3);
  reserve_now(b);
  queue.close_session(b);
  EXPECT_EQ(state(id), JobState::kReady);
  EXPECT_EQ(queue.peek(id)->priority, 3u);
  EXPECT_EQ(queue.counters().sessions, 1u);
  EXPECT_FALSE(queue.next_due().has_value());  // its TTR timeout is gone
}

TEST(JobQueueLimitsTest, OverABoundIsOutOfMemoryAndChangesNothing) {
  JobQueue queue(JobQueueLimits{.max_jobs = 2, .max_body_bytes = 10, .max_tubes = 2});
  SessionId s = queue.open_session();
  EXPECT_EQ(queue.put(s, 0, 0ms, 1s, "123456").outcome, Outcome::kOk);
  EXPECT_EQ(queue.put(s, 0, 0ms, 1s, "12345").outcome, Outcome::kOutOfMemory);  // 11 bytes
  EXPECT_EQ(queue.put(s, 0, 0ms, 1s, "1234").outcome, Outcome::kOk);
  EXPECT_EQ(queue.put(s, 0, 0ms, 1s, "").outcome, Outcome::kOutOfMemory);  // 3 jobs
  EXPECT_EQ(queue.counters().total_jobs, 2u);
  EXPECT_EQ(queue.use(s, "t2"), Outcome::kOk);
  EXPECT_EQ(queue.use(s, "t3"), Outcome::kOutOfMemory);  // a third tube
  EXPECT_EQ(queue.session(s)->used->name(), "t2");
  EXPECT_EQ(queue.watch(s, "t3"), Outcome::kOutOfMemory);  // a third tube
  EXPECT_EQ(queue.watch(s, "t2"), Outcome::kOk);
  EXPECT_EQ(queue.watch(s, "t2"), Outcome::kOk);  // already watched: no new one
  EXPECT_EQ(queue.session(s)->watched.size(), 2u);
  EXPECT_EQ(queue.tube_stats("t2")->watching, 1u);
  queue.ignore(s, "t2");
  queue.use(s, "default");
  EXPECT_EQ(queue.find_tube("t2"), nullptr);
  EXPECT_THROW(JobQueue(JobQueueLimits{0, 1, 1}), std::invalid_argument);
}

}  // namespace
}  // namespace wheel::jobs
