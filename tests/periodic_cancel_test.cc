// SPDX-License-Identifier: Apache-2.0
// HashedWheelTimer::new_periodic(): how a periodic timeout ends. cancel() between runs, from its
// own run, or while a run is due but not started; stop(); an executor that drops, refuses or
// still holds a job. It counts as one pending timeout until it ends, and ends cancelled. On a
// wheel::ManualClock, once per layout; cross-thread cases are in periodic_threads_test.
#include <atomic>
#include <chrono>
#include <functional>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>
#include <wheel/hashed_wheel_timer.h>
#include <wheel/manual_clock.h>

#include "support/timer_fixture.h"
#include "support/timer_test_support.h"

// Inside wheel::testing, the timer's names and the fixture's helpers need no using-declarations.
namespace wheel::testing {
namespace {

using namespace std::chrono_literals;

class PeriodicCancelTest : public TimerTest {};

TEST_P(PeriodicCancelTest, CancelBetweenRunsStopsEveryLaterRun) {
  // Period 10 ms from 10 ms: runs at 11, 21, 31 ... ms. cancel() when the clock reads
  // `cancel_at`: the runs before it happen, none after; the task is destroyed on the next tick;
  // it counts as one pending timeout until then and ends cancelled, never expired.
  struct Row {
    long long cancel_at_ms;
    int runs;
  };
  const Row rows[] = {{0, 0}, {5, 0}, {10, 0}, {11, 1}, {15, 1}, {21, 2}, {30, 2}, {45, 4}};
  for (const Row& r : rows) {
    ManualClock clock;
    HashedWheelTimer timer(options_with(1ms, 8), clock);
    timer.start();
    std::atomic<int> live{0};
    int runs = 0;
    TimeoutHandle handle = timer.new_periodic([&, t = Tracked(&live)] { ++runs; }, 10ms, 10ms);
    EXPECT_TRUE(handle->is_periodic());
    for (long long t = 1; t <= r.cancel_at_ms; ++t) clock.advance_to(std::chrono::milliseconds(t));
    EXPECT_EQ(timer.pending_timeouts(), 1u);
    EXPECT_FALSE(handle->is_expired()) << "expired between runs";
    ASSERT_TRUE(handle->cancel()) << "cancel at " << r.cancel_at_ms << " ms";
    EXPECT_FALSE(handle->cancel());
    clock.advance(1ms);
    EXPECT_EQ(live, 0) << "task not destroyed a tick after cancel at " << r.cancel_at_ms;
    EXPECT_EQ(timer.pending_timeouts(), 0u);
    for (int t = 0; t < 100; ++t) clock.advance(1ms);
    EXPECT_EQ(runs, r.runs) << "cancel at " << r.cancel_at_ms << " ms";
    EXPECT_TRUE(handle->is_cancelled());
    EXPECT_FALSE(handle->is_expired()) << "a periodic timeout ends cancelled, never expired";
  }
}

TEST_P(PeriodicCancelTest, CancelFromItsOwnRunEndsIt) {
  ManualClock clock;
  HashedWheelTimer timer(options_with(), clock);
  int runs = 0;
  timer.new_periodic(
      [&](Timeout& self) {
        EXPECT_TRUE(self.is_expired()) << "a run in progress sees its timeout expired";
        if (++runs == 5) {
          EXPECT_TRUE(self.cancel());
        }
      },
      0ms, 2ms);
  for (int t = 0; t < 100; ++t) clock.advance(1ms);
  EXPECT_EQ(runs, 5);
  EXPECT_EQ(timer.pending_timeouts(), 0u);
}

TEST_P(PeriodicCancelTest, CancelOfARunDueOnTheSameTickPreventsIt) {
  // A one-shot and a periodic timeout due on the same tick: when the one-shot runs first, the
  // periodic one is already handed to run (expired) but has not started; the one-shot cancels
  // it, so it must never start. Both scheduling orders, since a layout may run a tick's
  // timeouts in either order; in at least one the periodic run was due at the cancel.
  int due_but_not_started = 0;
  for (int order = 0; order < 2; ++order) {
    ManualClock clock;
    HashedWheelTimer timer(options_with(50ms), clock);
    int periodic_runs = 0;
    int runs_at_cancel = -1;
    bool was_due = false;
    TimeoutHandle victim;
    auto canceller = [&] {
      was_due = victim->is_expired();
      runs_at_cancel = periodic_runs;
      EXPECT_TRUE(victim->cancel());
    };
    if (order == 0) {
      timer.new_timeout(canceller, 10ms);
      victim = timer.new_periodic([&] { ++periodic_runs; }, 10ms, 1h);
    } else {
      victim = timer.new_periodic([&] { ++periodic_runs; }, 10ms, 1h);
      timer.new_timeout(canceller, 10ms);
    }
    clock.advance(50ms);  // both run on this tick
    clock.advance(50ms);  // the next one retires the cancelled periodic timeout
    EXPECT_EQ(timer.pending_timeouts(), 0u);
    EXPECT_EQ(periodic_runs, runs_at_cancel) << "a run started after cancel() returned true";
    due_but_not_started += was_due ? 1 : 0;
  }
  EXPECT_GT(due_but_not_started, 0) << "neither order had the periodic run due at the cancel";
}

TEST_P(PeriodicCancelTest, InvalidArgumentsThrowAndCountNothing) {
  ManualClock clock;
  HashedWheelTimer timer(options_with(), clock);
  EXPECT_THROW(timer.new_periodic([] {}, 1ms, 0ms), std::invalid_argument);
  EXPECT_THROW(timer.new_periodic([] {}, 1ms, -5ms), std::invalid_argument);
  EXPECT_THROW(timer.new_periodic([] {}, 1ms, std::chrono::nanoseconds::min()),
               std::invalid_argument);
  std::function<void()> empty;
  EXPECT_THROW(timer.new_periodic(empty, 1ms, 1ms), std::invalid_argument);
  EXPECT_EQ(timer.pending_timeouts(), 0u);
  // Huge periods are fine: "practically never again".
  int runs = 0;
  TimeoutHandle h = timer.new_periodic([&] { ++runs; }, 0ms, std::chrono::hours::max());
  for (int t = 0; t < 100; ++t) clock.advance(1ms);
  clock.advance(24h);
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(timer.pending_timeouts(), 1u);
  EXPECT_TRUE(h->cancel());
}

TEST_P(PeriodicCancelTest, StopReturnsItsJobWhichRunsOnceWithoutRearming) {
  ManualClock clock;
  HashedWheelTimer timer(options_with(), clock);
  int runs = 0;
  TimeoutHandle handle = timer.new_periodic([&] { ++runs; }, 1h, 1ms);
  clock.advance(1ms);  // in the wheel
  std::vector<TimerJob> jobs = timer.stop();
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].timeout(), handle.get());
  EXPECT_TRUE(handle->is_cancelled());
  jobs[0]();
  jobs[0]();
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(timer.pending_timeouts(), 0u);
}

// ---------------------------------------------------------------- with an executor

TEST_P(PeriodicCancelTest, AJobDroppedByTheExecutorEndsThePeriodicTimeoutCancelled) {
  ManualClock clock;
  int handed = 0;
  TimerOptions o = options_with();
  o.executor = [&](TimerJob) { ++handed; };  // drops every job
  HashedWheelTimer timer(o, clock);
  std::atomic<int> live{0};
  int runs = 0;
  TimeoutHandle handle = timer.new_periodic([&, t = Tracked(&live)] { ++runs; }, 1ms, 1ms);
  for (int t = 0; t < 20; ++t) clock.advance(1ms);
  EXPECT_TRUE(handle->is_cancelled());
  EXPECT_EQ(live, 0);
  EXPECT_EQ(timer.pending_timeouts(), 0u);
  EXPECT_EQ(handed, 1);
  EXPECT_EQ(runs, 0);
  EXPECT_FALSE(handle->cancel());
}

TEST_P(PeriodicCancelTest, AThrowingExecutorEndsThePeriodicTimeoutWithAnErrorLog) {
  wheel::testing::LogCapture log;
  ManualClock clock;
  TimerOptions o = options_with();
  o.executor = [](TimerJob) { throw std::runtime_error("pool is closed"); };
  HashedWheelTimer timer(o, clock);
  std::atomic<int> live{0};
  TimeoutHandle handle = timer.new_periodic([t = Tracked(&live)] {}, 1ms, 1ms);
  for (int t = 0; t < 20; ++t) clock.advance(1ms);
  EXPECT_TRUE(handle->is_cancelled());
  EXPECT_EQ(live, 0);
  EXPECT_EQ(timer.pending_timeouts(), 0u);
  EXPECT_EQ(log.count("pool is closed", spdlog::level::err), 1);
}

TEST_P(PeriodicCancelTest, CancelWhileTheJobIsAtTheExecutorEndsItWithoutARun) {
  // cancel() after the hand-over, before the executor ran the job: the run never starts, the
  // job's return retires the timeout.
  ManualClock clock;
  std::vector<TimerJob> held;
  HashedWheelTimer timer(options_holding_jobs(held), clock);
  std::atomic<int> live{0};
  int runs = 0;
  TimeoutHandle handle = timer.new_periodic([&, t = Tracked(&live)] { ++runs; }, 1ms, 1ms);
  clock.advance(2ms);
  ASSERT_EQ(held.size(), 1u);
  EXPECT_TRUE(handle->cancel());
  EXPECT_EQ(timer.pending_timeouts(), 1u) << "its job is still out";
  held[0]();
  EXPECT_EQ(runs, 0);
  EXPECT_EQ(live, 0);
  EXPECT_EQ(timer.pending_timeouts(), 0u);
  for (int t = 0; t < 10; ++t) clock.advance(1ms);
  EXPECT_EQ(held.size(), 1u) << "re-armed after its cancel";
}

TEST_P(PeriodicCancelTest, AJobStillAtTheExecutorWhenTheTimerStopsEndsCancelled) {
  // The executor keeps the job; the timer stops and is destroyed; then the job runs: it runs
  // its task once (it was handed over before the stop) and does not re-arm.
  std::vector<TimerJob> held;
  TimerOptions o = options_holding_jobs(held);
  int runs = 0;
  std::atomic<int> live{0};
  TimeoutHandle handle;
  {
    ManualClock clock;
    HashedWheelTimer timer(o, clock);
    handle = timer.new_periodic([&, t = Tracked(&live)] { ++runs; }, 1ms, 1ms);
    clock.advance(2ms);
    ASSERT_EQ(held.size(), 1u);
    EXPECT_EQ(timer.pending_timeouts(), 1u);
    EXPECT_TRUE(timer.stop().empty()) << "the executor holds it, not the timer";
    EXPECT_EQ(timer.pending_timeouts(), 0u);
  }
  EXPECT_TRUE(handle->is_expired());
  held[0]();
  EXPECT_EQ(runs, 1);
  EXPECT_TRUE(handle->is_cancelled());
  EXPECT_EQ(live, 0);
}

INSTANTIATE_TEST_SUITE_P(Layouts, PeriodicCancelTest, kLayouts, wheel::testing::layout_name);

}  // namespace
}  // namespace wheel::testing
