// SPDX-License-Identifier: Apache-2.0
// HashedWheelTimer: stop() and the executor hand-off. On a wheel::ManualClock, once per layout:
// what stop() returns wherever a timeout sits (submission queue or wheel), jobs run or dropped,
// a stop before start or twice, stop() from a task, and the executor receiving, dropping or
// refusing jobs. What only the worker thread can show is in timer_worker_test.
#include <atomic>
#include <chrono>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
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

class TimerStopTest : public TimerTest {};

// ---------------------------------------------------------------- stop()

TEST_P(TimerStopTest, StopReturnsAJobForEveryUnrunTimeoutMarkedCancelled) {
  ManualClock clock;
  HashedWheelTimer timer(options_with(1ms), clock);
  std::atomic<int> live{0};
  std::vector<TimeoutHandle> scheduled;
  for (int i = 0; i < 1'000; ++i) {
    scheduled.push_back(timer.new_timeout([t = Tracked(&live)] {}, 1h));
  }
  ASSERT_TRUE(scheduled[3]->cancel());
  clock.advance(1ms);  // the first 1,000 are in the wheel now, the cancelled one is gone
  // More that stay in the submission queue: no tick moves them before stop().
  for (int i = 0; i < 5'000; ++i) {
    scheduled.push_back(timer.new_timeout([t = Tracked(&live)] {}, 1h));
  }
  ASSERT_TRUE(scheduled[1'500]->cancel());  // cancelled in the queue
  std::vector<TimerJob> unrun = timer.stop();
  EXPECT_EQ(unrun.size(), scheduled.size() - 2);
  std::set<Timeout*> returned;
  for (const auto& job : unrun) {
    ASSERT_TRUE(job.timeout()->is_cancelled());
    returned.insert(job.timeout());
  }
  EXPECT_EQ(returned.size(), unrun.size()) << "a timeout came back twice";
  EXPECT_EQ(returned.count(scheduled[3].get()), 0u);
  EXPECT_EQ(returned.count(scheduled[1'500].get()), 0u);
  EXPECT_EQ(timer.pending_timeouts(), 0u);
  EXPECT_EQ(live, static_cast<int>(unrun.size()))
      << "the jobs hold the unrun tasks (the cancelled ones are destroyed)";
  unrun.clear();
  EXPECT_EQ(live, 0) << "dropping the jobs destroys their tasks";
}

TEST_P(TimerStopTest, JobsFromStopRunTheirTaskOnTheCallingThread) {
  ManualClock clock;
  HashedWheelTimer timer(options_with(1ms), clock);
  int runs = 0;
  bool saw_cancelled = false;
  TimeoutHandle handle = timer.new_timeout(
      [&](Timeout& self) {
        ++runs;
        saw_cancelled = self.is_cancelled();
      },
      1h);
  std::vector<TimerJob> jobs = timer.stop();
  ASSERT_EQ(jobs.size(), 1u);
  TimeoutHandle again = jobs[0].handle();
  EXPECT_EQ(again, handle);
  EXPECT_FALSE(handle->cancel()) << "already cancelled by stop()";
  jobs[0]();
  jobs[0]();  // a second call does nothing
  EXPECT_EQ(runs, 1);
  EXPECT_TRUE(saw_cancelled);
  EXPECT_EQ(jobs[0].timeout(), nullptr);
  EXPECT_FALSE(jobs[0].handle());
  EXPECT_TRUE(again->is_cancelled()) << "handles stay valid after the job ran";
}

TEST_P(TimerStopTest, IgnoringWhatStopReturnsDestroysEveryTask) {
  std::atomic<int> live{0};
  int runs = 0;
  TimeoutHandle kept;
  {
    ManualClock clock;
    HashedWheelTimer timer(options_with(1ms), clock);
    for (int i = 0; i < 100; ++i) timer.new_timeout([&, t = Tracked(&live)] { ++runs; }, 1h);
    clock.advance(1ms);
    kept = timer.new_periodic([&, t = Tracked(&live)] { ++runs; }, 1h, 1h);
    ASSERT_EQ(live, 101);
    timer.stop();
    EXPECT_EQ(live, 0);
  }
  EXPECT_EQ(runs, 0);
  EXPECT_TRUE(kept->is_cancelled());
}

TEST_P(TimerStopTest, SecondStopReturnsNothing) {
  ManualClock clock;
  HashedWheelTimer timer(options_with(1ms), clock);
  timer.new_timeout([] {}, 1h);
  EXPECT_EQ(timer.stop().size(), 1u);
  EXPECT_TRUE(timer.stop().empty());
}

TEST_P(TimerStopTest, StopBeforeStartReturnsNothingAndStartsNothing) {
  const std::string name = "never-started";
  HashedWheelTimer timer(options_with(1ms, 512, name));
  EXPECT_TRUE(timer.stop().empty());
  EXPECT_FALSE(wheel::testing::find_thread(name).has_value());
  EXPECT_TRUE(timer.is_stopped());
  EXPECT_THROW(timer.new_timeout([] {}, 1ms), std::logic_error);
  EXPECT_THROW(timer.start(), std::logic_error);
}

TEST_P(TimerStopTest, NewTimeoutAfterStopThrowsLogicError) {
  ManualClock clock;
  HashedWheelTimer timer(options_with(1ms), clock);
  timer.start();
  timer.stop();
  EXPECT_THROW(timer.new_timeout([] {}, 1ms), std::logic_error);
  EXPECT_THROW(timer.new_periodic([] {}, 1ms, 1ms), std::logic_error);
  EXPECT_EQ(timer.pending_timeouts(), 0u);
}

TEST_P(TimerStopTest, StopFromATaskThrowsLogicErrorAndTheTimerRunsOn) {
  ManualClock clock;
  HashedWheelTimer timer(options_with(1ms), clock);
  int outcome = 0;
  bool later_ran = false;
  timer.new_timeout([&](Timeout& self) { outcome = outcome_of([&] { self.timer().stop(); }); },
                    1ms);
  timer.new_timeout([&] { later_ran = true; }, 5ms);
  clock.advance(10ms);
  EXPECT_EQ(outcome, 2);
  EXPECT_TRUE(later_ran);
  EXPECT_FALSE(timer.is_stopped());
}

// ---------------------------------------------------------------- the executor

TEST_P(TimerStopTest, ExecutorReceivesExpiredTasksToRunElsewhere) {
  ManualClock clock;
  std::vector<TimerJob> jobs;
  TimerOptions options = options_with(1ms);
  options.executor = [&](TimerJob job) { jobs.push_back(std::move(job)); };
  HashedWheelTimer timer(options, clock);
  int runs = 0;
  TimeoutHandle handle = timer.new_timeout(
      [&](Timeout& self) {
        EXPECT_TRUE(self.is_expired());
        ++runs;
      },
      1ms);
  clock.advance(1ms);
  EXPECT_TRUE(jobs.empty()) << "handed over before its tick ended";
  clock.advance(1ms);
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_TRUE(handle->is_expired());
  EXPECT_EQ(runs, 0) << "the timer must hand the task over, not run it";
  EXPECT_EQ(timer.pending_timeouts(), 0u);
  TimerJob job = std::move(jobs.front());
  EXPECT_EQ(job.timeout(), handle.get());
  job();
  job();  // a second call does nothing
  EXPECT_EQ(runs, 1);
}

TEST_P(TimerStopTest, AJobDroppedUnrunDestroysItsTaskWithoutRunning) {
  ManualClock clock;
  int handed = 0;
  TimerOptions options = options_with(1ms);
  options.executor = [&](TimerJob) { ++handed; };  // drops every job
  HashedWheelTimer timer(options, clock);
  std::atomic<int> live{0};
  bool ran = false;
  TimeoutHandle handle = timer.new_timeout([&, t = Tracked(&live)] { ran = true; }, 1ms);
  clock.advance(2ms);
  EXPECT_EQ(handed, 1);
  EXPECT_EQ(live, 0);
  EXPECT_FALSE(ran);
  EXPECT_TRUE(handle->is_expired());
}

TEST_P(TimerStopTest, ThrowingExecutorDropsTheTaskLogsAndTheTimerCarriesOn) {
  wheel::testing::LogCapture log;
  ManualClock clock;
  int calls = 0;
  TimerOptions options = options_with(1ms);
  options.executor = [&](TimerJob job) {
    if (calls++ == 0) throw std::runtime_error("queue full");
    job();
  };
  HashedWheelTimer timer(options, clock);
  bool first_ran = false;
  bool second_ran = false;
  std::atomic<int> live{0};
  TimeoutHandle dropped = timer.new_timeout([&, t = Tracked(&live)] { first_ran = true; }, 1ms);
  timer.new_timeout([&] { second_ran = true; }, 3ms);
  clock.advance(5ms);
  EXPECT_TRUE(second_ran);
  EXPECT_EQ(log.count("queue full", spdlog::level::err), 1);
  // The documented outcome: the task is destroyed unrun and the timeout stays expired.
  EXPECT_FALSE(first_ran);
  EXPECT_EQ(live, 0);
  EXPECT_TRUE(dropped->is_expired());
  EXPECT_FALSE(dropped->is_cancelled());
  EXPECT_FALSE(dropped->cancel());
  EXPECT_EQ(timer.pending_timeouts(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Layouts, TimerStopTest, kLayouts, wheel::testing::layout_name);

}  // namespace
}  // namespace wheel::testing
