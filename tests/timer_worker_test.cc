// SPDX-License-Identifier: Apache-2.0
// HashedWheelTimer's worker thread itself, on the real clock: it sleeps while idle or until the
// next due bucket (counted as the kernel's voluntary context switches, which a loaded machine
// cannot add to a sleeping thread), wakes for a new timeout, carries its name, lets a running
// task finish before stop() returns, refuses stop() from its own task and hands tasks to the
// executor from its own thread. Every wait is for an event, with generous bounds; when things
// run is timer_schedule_test's business, on a manual clock.
#include <atomic>
#include <chrono>
#include <latch>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <wheel/hashed_wheel_timer.h>

#include "support/timer_fixture.h"
#include "support/timer_test_support.h"

// Inside wheel::testing, the timer's names and the fixture's helpers need no using-declarations.
namespace wheel::testing {
namespace {

using namespace std::chrono_literals;

class TimerWorkerTest : public TimerTest {
 protected:
  // The kernel thread id of the worker named `name`, once it has gone to sleep at least once.
  static int worker_tid(const std::string& name) {
    std::optional<int> tid;
    EXPECT_TRUE(wait_until([&] { return (tid = find_thread(name)).has_value(); }));
    if (!tid) return -1;
    EXPECT_TRUE(wait_until([&] { return voluntary_switches(*tid) > 0; }));
    return *tid;
  }
};

// ---------------------------------------------------------------- sleeping and waking

// A sleeping worker makes no voluntary context switch, a worker waking every tick makes one a
// tick. A loaded machine can only make the window longer or the worker later, never add
// switches to a thread that sleeps, so these cannot fail by load; timer_schedule_test pins the
// exact ticks on a manual clock.
TEST_P(TimerWorkerTest, IdleWorkerDoesNotWakeEveryTick) {
  const std::string name = "idle-wheel";
  HashedWheelTimer timer(options_with(1ms, 512, name));
  timer.start();
  const int tid = worker_tid(name);
  ASSERT_GE(tid, 0);
  const auto before = voluntary_switches(tid);
  std::this_thread::sleep_for(500ms);  // >= 500 ticks: a ticking worker would sleep 500 times
  EXPECT_LT(voluntary_switches(tid) - before, 10);
}

TEST_P(TimerWorkerTest, WorkerSleepsPastEmptyTicksUntilTheNextDueBucket) {
  const std::string name = "sparse-wheel";
  HashedWheelTimer timer(options_with(1ms, 4096, name));
  // Due far beyond the window, so no real clock reading can make it due meanwhile.
  TimeoutHandle handle = timer.new_timeout([] {}, 1h);
  const int tid = worker_tid(name);
  ASSERT_GE(tid, 0);
  const auto before = voluntary_switches(tid);
  std::this_thread::sleep_for(400ms);
  EXPECT_LT(voluntary_switches(tid) - before, 10);
  EXPECT_TRUE(handle->cancel());
}

TEST_P(TimerWorkerTest, SleepingWorkerWakesForANewTimeout) {
  // Nothing pending: the worker waits with no deadline, so only the new timeout's wake-up can
  // make it run (wait_until's bound is generous; speed is wheel-bench's business).
  const std::string name = "wake-wheel";
  HashedWheelTimer timer(options_with(10ms, 512, name));
  timer.start();
  ASSERT_GE(worker_tid(name), 0);  // it has slept once: most likely asleep now
  std::atomic<bool> ran{false};
  timer.new_timeout([&] { ran = true; }, 10ms);
  EXPECT_TRUE(wait_until([&] { return ran.load(); }));
}

TEST_P(TimerWorkerTest, SleepingWorkerWakesForACancellation) {
  // The count drops once the worker has processed the cancel: without a wake-up, an hour.
  const std::string name = "cancel-wheel";
  HashedWheelTimer timer(options_with(1ms, 512, name));
  TimeoutHandle handle = timer.new_timeout([] {}, 1h);
  ASSERT_GE(worker_tid(name), 0);
  ASSERT_TRUE(handle->cancel());
  EXPECT_TRUE(wait_until([&] { return timer.pending_timeouts() == 0; }));
}

TEST_P(TimerWorkerTest, WorkerThreadCarriesTheConfiguredName) {
  HashedWheelTimer timer(options_with(1ms, 512, "my-wheel-thread-name-is-long"));
  timer.start();
  // Linux keeps 15 characters of a thread name.
  EXPECT_TRUE(wait_until([] { return find_thread("my-wheel-thread").has_value(); }));
}

// ---------------------------------------------------------------- tasks on the worker

TEST_P(TimerWorkerTest, TasksRunOnTheWorkerThread) {
  HashedWheelTimer timer(options_with(1ms));
  std::mutex mutex;
  std::vector<std::thread::id> ran_on;
  for (int i = 0; i < 3; ++i) {
    timer.new_timeout(
        [&] {
          std::lock_guard lock(mutex);
          ran_on.push_back(std::this_thread::get_id());
        },
        std::chrono::milliseconds(i));
  }
  ASSERT_TRUE(wait_until([&] {
    std::lock_guard lock(mutex);
    return ran_on.size() == 3;
  }));
  std::lock_guard lock(mutex);
  EXPECT_NE(ran_on[0], std::this_thread::get_id());
  EXPECT_EQ(ran_on[0], ran_on[1]);
  EXPECT_EQ(ran_on[1], ran_on[2]);
}

TEST_P(TimerWorkerTest, StopFromATaskThrowsLogicError) {
  HashedWheelTimer timer(options_with(1ms));
  std::atomic<int> outcome{0};
  timer.new_timeout([&](Timeout& self) { outcome = outcome_of([&] { self.timer().stop(); }); },
                    1ms);
  ASSERT_TRUE(wait_until([&] { return outcome != 0; }));
  EXPECT_EQ(outcome, 2);
}

TEST_P(TimerWorkerTest, StopLetsARunningTaskFinishFirst) {
  HashedWheelTimer timer(options_with(1ms));
  std::latch started(1);
  std::latch release(1);
  std::atomic<bool> finished{false};
  timer.new_timeout(
      [&] {
        started.count_down();
        release.wait();
        finished = true;
      },
      1ms);
  started.wait();
  // The task returns only once stop() has begun (is_stopped() turns true at its start).
  std::thread releaser([&] {
    EXPECT_TRUE(wait_until([&] { return timer.is_stopped(); }));
    release.count_down();
  });
  timer.stop();
  EXPECT_TRUE(finished) << "stop() returned before the running task did";
  releaser.join();
}

TEST_P(TimerWorkerTest, ExecutorGetsTheJobsFromTheWorkerThread) {
  std::mutex mutex;
  std::vector<TimerJob> jobs;
  std::thread::id handed_on;
  TimerOptions options = options_with(1ms);
  options.executor = [&](TimerJob job) {
    std::lock_guard lock(mutex);
    handed_on = std::this_thread::get_id();
    jobs.push_back(std::move(job));
  };
  HashedWheelTimer timer(options);
  std::atomic<int> runs{0};
  std::thread::id ran_on;
  TimeoutHandle handle = timer.new_timeout(
      [&] {
        ran_on = std::this_thread::get_id();
        ++runs;
      },
      1ms);
  ASSERT_TRUE(wait_until([&] {
    std::lock_guard lock(mutex);
    return jobs.size() == 1;
  }));
  std::optional<TimerJob> job;
  {
    std::lock_guard lock(mutex);
    EXPECT_NE(handed_on, std::this_thread::get_id());
    job.emplace(std::move(jobs.front()));
  }
  EXPECT_EQ(runs, 0);
  (*job)();
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(ran_on, std::this_thread::get_id()) << "a job runs where it is called";
}

INSTANTIATE_TEST_SUITE_P(Layouts, TimerWorkerTest, kLayouts, wheel::testing::layout_name);

}  // namespace
}  // namespace wheel::testing
