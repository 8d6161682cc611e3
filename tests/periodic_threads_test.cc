// SPDX-License-Identifier: Apache-2.0
// HashedWheelTimer::new_periodic() across threads, on the real worker: cancel() from another
// thread while a run is in progress, runs that never overlap on an executor's many threads,
// re-arms racing cancel(). When runs happen is periodic_schedule_test's business, on a manual
// clock; waits here are for events, with generous bounds.
#include <atomic>
#include <chrono>
#include <functional>
#include <latch>
#include <memory>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <wheel/hashed_wheel_timer.h>

#include "support/timer_fixture.h"
#include "support/timer_test_support.h"
#include "thread_pool.h"

// Inside wheel::testing, the timer's names and the fixture's helpers need no using-declarations.
namespace wheel::testing {
namespace {

using namespace std::chrono_literals;

class PeriodicThreadsTest : public TimerTest {};

// A timer whose tasks run on a pool of `threads` std::function<void()> threads (the example's
// pool, examples/thread_pool.h), the kind a move-only TimerJob must be wrapped for.
struct PooledTimer {
  PooledTimer(int threads, TimerOptions options) : pool(threads), timer(on_pool(options, pool)) {}
  static TimerOptions on_pool(TimerOptions options, ThreadPool& pool) {
    options.executor = [&pool](TimerJob job) {
      auto shared = std::make_shared<TimerJob>(std::move(job));
      pool.post([shared] { (*shared)(); });
    };
    return options;
  }
  ThreadPool pool;  // declared first: it outlives the timer, so queued jobs still run
  HashedWheelTimer timer;
};

TEST_P(PeriodicThreadsTest, CancelFromAnotherThreadLetsTheRunningRunFinishAndStopsTheRest) {
  HashedWheelTimer timer(options_with());
  std::atomic<int> started{0};
  std::atomic<int> finished{0};
  std::atomic<int> live{0};
  std::latch in_third_run(1);
  std::latch release(1);
  TimeoutHandle handle = timer.new_periodic(
      [&, t = Tracked(&live)](Timeout& self) {
        EXPECT_TRUE(self.is_expired()) << "a run in progress sees its timeout expired";
        if (++started == 3) {
          in_third_run.count_down();
          release.wait();
        }
        ++finished;
      },
      1ms, 2ms);
  in_third_run.wait();
  EXPECT_TRUE(handle->cancel());
  release.count_down();
  // Once it has left the count it is retired: no run can start after that.
  ASSERT_TRUE(wait_until([&] { return timer.pending_timeouts() == 0 && live == 0; }));
  EXPECT_EQ(started, 3);
  EXPECT_EQ(finished, 3) << "the run in progress finishes";
  EXPECT_TRUE(handle->is_cancelled());
}

TEST_P(PeriodicThreadsTest, WithAnExecutorRunsNeverOverlapEvenOnManyThreads) {
  PooledTimer pooled(3, options_with());
  HashedWheelTimer& timer = pooled.timer;
  std::atomic<int> runs{0};
  std::atomic<int> in_flight{0};
  std::atomic<bool> overlapped{false};
  std::atomic<int> live{0};
  const auto timer_thread = std::this_thread::get_id();
  TimeoutHandle handle = timer.new_periodic(
      [&, t = Tracked(&live)] {
        if (++in_flight > 1) overlapped = true;
        EXPECT_NE(std::this_thread::get_id(), timer_thread);
        std::this_thread::sleep_for(7ms);  // longer than the period
        --in_flight;
        ++runs;
      },
      1ms, 2ms);
  ASSERT_TRUE(wait_until([&] { return runs >= 15; }));
  EXPECT_EQ(timer.pending_timeouts(), 1u) << "still pending while its job is at the executor";
  ASSERT_TRUE(handle->cancel());
  // Retired (out of the count, task destroyed): no run can start after that.
  ASSERT_TRUE(wait_until([&] { return timer.pending_timeouts() == 0 && live == 0; }));
  EXPECT_EQ(in_flight, 0);
  EXPECT_FALSE(overlapped);
}

TEST_P(PeriodicThreadsTest, CancelsRacingReArmsOnTheExecutorEndEveryTimeoutOnce) {
  // Many short-period timeouts re-armed by a pool's threads while this thread cancels them:
  // each ends cancelled exactly once, its task destroyed, and the count returns to 0.
  PooledTimer pooled(2, options_with());
  HashedWheelTimer& timer = pooled.timer;
  std::atomic<int> live{0};
  std::atomic<int> runs{0};
  std::vector<TimeoutHandle> handles;
  for (int i = 0; i < 200; ++i) {
    handles.push_back(timer.new_periodic([&, t = Tracked(&live)] { ++runs; }, 0ms, 1ms));
  }
  ASSERT_TRUE(wait_until([&] { return runs >= 400; }));  // runs go round, re-armed by the pool
  int cancelled = 0;
  for (auto& handle : handles) cancelled += handle->cancel() ? 1 : 0;
  EXPECT_EQ(cancelled, 200);
  ASSERT_TRUE(wait_until([&] { return timer.pending_timeouts() == 0 && live == 0; }));
  for (auto& handle : handles) {
    EXPECT_TRUE(handle->is_cancelled());
    EXPECT_FALSE(handle->cancel());
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, PeriodicThreadsTest, kLayouts, wheel::testing::layout_name);

}  // namespace
}  // namespace wheel::testing
