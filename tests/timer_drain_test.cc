// SPDX-License-Identifier: Apache-2.0
// HashedWheelTimer::drain() and is_stopped(): a stop that first lets every pending timeout run.
// Every test runs against both layouts.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <latch>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <wheel/hashed_wheel_timer.h>

#include "support/timer_layouts.h"
#include "support/timer_test_support.h"

namespace {

using namespace std::chrono_literals;
using wheel::HashedWheelTimer;
using wheel::Timeout;
using wheel::TimeoutHandle;
using wheel::TimerJob;
using wheel::TimerLayout;
using wheel::TimerOptions;
using wheel::testing::outcome_of;
using wheel::testing::wait_until;

class DrainTest : public ::testing::TestWithParam<TimerLayout> {
 protected:
  TimerOptions options(std::chrono::milliseconds tick = 1ms) const {
    TimerOptions o;
    o.tick_duration = tick;
    o.layout = GetParam();
    return o;
  }
};

// Runs drain() on another thread; done() tells whether it has returned.
class BackgroundDrain {
 public:
  explicit BackgroundDrain(HashedWheelTimer& timer)
      : result_(std::async(std::launch::async, [&timer] { return timer.drain(); })) {}
  bool done() const { return result_.wait_for(0s) == std::future_status::ready; }
  std::vector<TimerJob> get() { return result_.get(); }

 private:
  std::future<std::vector<TimerJob>> result_;
};

// Until new_timeout() from outside the timer's tasks throws: drain() has begun.
bool wait_until_draining(HashedWheelTimer& timer) {
  return wait_until([&] {
    try {
      timer.new_timeout([] {}, 0ms);
      return false;
    } catch (const std::logic_error&) {
      return true;
    }
  });
}

TEST_P(DrainTest, WaitsForEveryPendingTimeoutToRunThenStops) {
  HashedWheelTimer timer(options());
  std::atomic<int> runs{0};
  for (int i = 0; i < 50; ++i) {
    timer.new_timeout([&] { ++runs; }, std::chrono::milliseconds(10 + 4 * i));
  }
  EXPECT_FALSE(timer.is_stopped());
  EXPECT_TRUE(timer.drain().empty());
  EXPECT_EQ(runs, 50) << "drain() returned before every timeout ran";
  EXPECT_EQ(timer.pending_timeouts(), 0u);
  EXPECT_TRUE(timer.is_stopped());
  EXPECT_THROW(timer.new_timeout([] {}, 1ms), std::logic_error);
  EXPECT_TRUE(timer.stop().empty());
}

TEST_P(DrainTest, RefusesOutsideSchedulingButLetsTasksScheduleTheirSuccessors) {
  HashedWheelTimer timer(options());
  std::atomic<int> chain{0};
  std::atomic<int> refused_in_task{0};
  std::atomic<bool> looked{false};
  std::function<void(Timeout&)> step = [&](Timeout& self) {
    // The first step waits (bounded) until the test has looked at the draining timer: a test
    // thread stalled for the chain's 200 ms would otherwise find the drain over.
    if (chain == 0) wait_until([&] { return looked.load(); });
    if (++chain < 10) {
      try {
        self.timer().new_timeout(step, 20ms);
      } catch (const std::logic_error&) {
        ++refused_in_task;
      }
    }
  };
  timer.new_timeout(step, 20ms);
  BackgroundDrain drain(timer);
  const bool draining = wait_until_draining(timer);
  EXPECT_THROW(timer.new_periodic([] {}, 1ms, 1ms), std::logic_error);
  EXPECT_FALSE(timer.is_stopped()) << "draining is not stopped yet";
  looked = true;
  ASSERT_TRUE(draining);
  EXPECT_TRUE(drain.get().empty());
  EXPECT_EQ(chain, 10) << "the chain of tasks was cut short";
  EXPECT_EQ(refused_in_task, 0);
  EXPECT_TRUE(timer.is_stopped());
}

TEST_P(DrainTest, BlocksWhilePeriodicTimeoutsRunAndFinishesOnceTheyAreCancelled) {
  HashedWheelTimer timer(options());
  std::atomic<int> runs{0};
  TimeoutHandle heartbeat = timer.new_periodic([&] { ++runs; }, 1ms, 2ms);
  BackgroundDrain drain(timer);
  ASSERT_TRUE(wait_until_draining(timer));
  const int runs_when_draining = runs;
  // Waits for runs (events), not for time: a loaded machine only makes this slower.
  EXPECT_TRUE(wait_until([&] { return runs >= runs_when_draining + 3; }))
      << "a periodic timeout keeps running while draining";
  EXPECT_FALSE(drain.done()) << "drain() returned while a periodic timeout was still pending";
  ASSERT_TRUE(heartbeat->cancel());
  EXPECT_TRUE(drain.get().empty());
  EXPECT_TRUE(timer.is_stopped());
}

TEST_P(DrainTest, CancellingWhatIsPendingLetsItFinish) {
  HashedWheelTimer timer(options());
  std::vector<TimeoutHandle> handles;
  for (int i = 0; i < 10; ++i) handles.push_back(timer.new_timeout([] {}, 1h));
  BackgroundDrain drain(timer);
  ASSERT_TRUE(wait_until_draining(timer));
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(drain.done());
  for (auto& handle : handles) handle->cancel();
  EXPECT_TRUE(drain.get().empty());
}

TEST_P(DrainTest, StopFromAnotherThreadEndsTheDrainAndGetsTheJobs) {
  HashedWheelTimer timer(options());
  TimeoutHandle handle = timer.new_timeout([] {}, 1h);
  BackgroundDrain drain(timer);
  ASSERT_TRUE(wait_until_draining(timer));
  std::vector<TimerJob> jobs = timer.stop();
  // The probes of wait_until_draining() (0 ms timeouts) may still be pending too.
  ASSERT_GE(jobs.size(), 1u);
  EXPECT_EQ(std::count_if(jobs.begin(), jobs.end(),
                          [&](const TimerJob& job) { return job.timeout() == handle.get(); }),
            1);
  EXPECT_TRUE(handle->is_cancelled());
  EXPECT_TRUE(drain.get().empty());
  EXPECT_TRUE(timer.is_stopped());
}

TEST_P(DrainTest, FromATaskThrowsLogicError) {
  HashedWheelTimer timer(options());
  std::atomic<int> outcome{0};
  timer.new_timeout([&](Timeout& self) { outcome = outcome_of([&] { self.timer().drain(); }); },
                    1ms);
  ASSERT_TRUE(wait_until([&] { return outcome != 0; }));
  EXPECT_EQ(outcome, 2);
  EXPECT_FALSE(timer.is_stopped());
}

TEST_P(DrainTest, FromATaskOnTheExecutorThrowsLogicError) {
  std::vector<std::thread> threads;
  std::mutex mutex;
  TimerOptions o = options();
  o.executor = [&](TimerJob job) {
    std::lock_guard lock(mutex);
    threads.emplace_back(std::move(job));  // std::thread accepts move-only callables
  };
  std::atomic<int> outcome{0};
  {
    HashedWheelTimer timer(o);
    timer.new_timeout([&](Timeout& self) { outcome = outcome_of([&] { self.timer().drain(); }); },
                      1ms);
    ASSERT_TRUE(wait_until([&] { return outcome != 0; }));
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(outcome, 2);
}

TEST_P(DrainTest, WithAnExecutorEveryTaskIsHandedOverFirst) {
  std::mutex mutex;
  std::vector<TimerJob> jobs;
  TimerOptions o = options();
  o.executor = [&](TimerJob job) {
    std::lock_guard lock(mutex);
    jobs.push_back(std::move(job));
  };
  HashedWheelTimer timer(o);
  std::atomic<int> runs{0};
  for (int i = 0; i < 20; ++i) timer.new_timeout([&] { ++runs; }, std::chrono::milliseconds(i));
  EXPECT_TRUE(timer.drain().empty());
  std::lock_guard lock(mutex);
  EXPECT_EQ(jobs.size(), 20u);
  EXPECT_EQ(runs, 0) << "drain() does not run what the executor holds";
  for (auto& job : jobs) job();
  EXPECT_EQ(runs, 20);
}

TEST_P(DrainTest, NeverStartedTimerDrainsAtOnceAndIsStopped) {
  const std::string name = "never-drained";
  TimerOptions o = options();
  o.thread_name = name;
  HashedWheelTimer timer(o);
  EXPECT_TRUE(timer.drain().empty());
  EXPECT_TRUE(timer.is_stopped());
  EXPECT_FALSE(wheel::testing::find_thread(name).has_value());
  EXPECT_THROW(timer.new_timeout([] {}, 1ms), std::logic_error);
}

TEST_P(DrainTest, IsStoppedTurnsTrueAsSoonAsStopBegins) {
  // A task still running while stop() joins the worker can see it and not reschedule.
  HashedWheelTimer timer(options());
  std::latch running(1);
  std::atomic<int> outcome{0};
  timer.new_timeout(
      [&](Timeout& self) {
        running.count_down();
        if (!wait_until([&] { return self.timer().is_stopped(); })) return;
        outcome = outcome_of([&] { self.timer().new_timeout([] {}, 1ms); });
      },
      1ms);
  running.wait();
  EXPECT_FALSE(timer.is_stopped());
  timer.stop();
  EXPECT_TRUE(timer.is_stopped());
  EXPECT_EQ(outcome, 2);
}

INSTANTIATE_TEST_SUITE_P(Layouts, DrainTest, wheel::testing::kLayouts, wheel::testing::layout_name);

}  // namespace
