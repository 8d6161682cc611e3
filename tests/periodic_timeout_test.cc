// SPDX-License-Identifier: Apache-2.0
// HashedWheelTimer::new_periodic(): fixed rate on absolute deadlines, cancellation, no overlap,
// coalescing of missed periods, the executor, stop(). Every test runs against both layouts.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <latch>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <wheel/hashed_wheel_timer.h>

#include "periodic_deadline.h"
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
using wheel::testing::Clock;
using wheel::testing::wait_until;

// Counts live instances, so a test can see when a task's captures are destroyed.
struct Tracked {
  explicit Tracked(std::atomic<int>* live) : live(live) { ++*live; }
  Tracked(const Tracked& other) : live(other.live) { ++*live; }
  ~Tracked() { --*live; }
  std::atomic<int>* live;
};

// Start times of the runs of one periodic task, safe to record from any thread.
class RunLog {
 public:
  void record() {
    std::lock_guard lock(mutex_);
    runs_.push_back(Clock::now());
  }
  std::vector<Clock::time_point> runs() const {
    std::lock_guard lock(mutex_);
    return runs_;
  }
  std::size_t size() const {
    std::lock_guard lock(mutex_);
    return runs_.size();
  }

 private:
  mutable std::mutex mutex_;
  std::vector<Clock::time_point> runs_;
};

// Where runs fall within their period, measured from `grid_start` (the first deadline, or a
// little before it): the median of (run - grid_start) mod period. Runs on a fixed-rate grid sit
// about a tick after a grid point; runs that drift or burst spread over the whole period.
Clock::duration median_phase(const std::vector<Clock::time_point>& runs,
                             Clock::time_point grid_start, Clock::duration period) {
  std::vector<Clock::duration> phases;
  for (auto run : runs) phases.push_back((run - grid_start) % period);
  std::nth_element(phases.begin(), phases.begin() + phases.size() / 2, phases.end());
  return phases[phases.size() / 2];
}

class PeriodicTest : public ::testing::TestWithParam<TimerLayout> {
 protected:
  TimerOptions options(std::chrono::milliseconds tick = 1ms) const {
    TimerOptions o;
    o.tick_duration = tick;
    o.layout = GetParam();
    return o;
  }
};

TEST(PeriodicDeadlineTest, NoDriftOverAHundredThousandPeriods) {
  // Each run returns a little late (up to 90% of a period): the next deadline stays on the
  // grid first + k * period, exactly, for 10^5 periods.
  constexpr std::int64_t kFirst = 1'234'567;
  constexpr std::int64_t kPeriod = 1'000'003;  // ns, deliberately not a multiple of the tick
  std::int64_t deadline = kFirst;
  for (std::int64_t k = 1; k <= 100'000; ++k) {
    const std::int64_t returned_at = deadline + (k * 7919) % (kPeriod * 9 / 10);
    deadline = wheel::detail::next_periodic_deadline(deadline, kPeriod, returned_at);
    ASSERT_EQ(deadline, kFirst + k * kPeriod) << "period " << k;
  }
}

TEST(PeriodicDeadlineTest, MissedPeriodsCoalesceIntoTheNextDeadlineAhead) {
  // Due at 100, period 10, returned at 137: 110, 120 and 130 are skipped, the next run is at 140.
  EXPECT_EQ(wheel::detail::next_periodic_deadline(100, 10, 137), 140);
  EXPECT_EQ(wheel::detail::next_periodic_deadline(100, 10, 140), 150);  // strictly after now
  EXPECT_EQ(wheel::detail::next_periodic_deadline(100, 10, 109), 110);
  // A negative first deadline (negative initial delay) stays on its grid too.
  EXPECT_EQ(wheel::detail::next_periodic_deadline(-25, 10, 3), 5);
  // Saturates instead of overflowing.
  constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
  EXPECT_EQ(wheel::detail::next_periodic_deadline(kMax - 5, 10, 0), kMax);
  EXPECT_EQ(wheel::detail::next_periodic_deadline(0, kMax, kMax - 1), kMax);
  EXPECT_EQ(
      wheel::detail::next_periodic_deadline(std::numeric_limits<std::int64_t>::min(), 3, kMax - 1),
      kMax);
}

TEST_P(PeriodicTest, RunsAtFixedRateOnAbsoluteDeadlinesNeverEarly) {
  HashedWheelTimer timer(options());
  RunLog log;
  constexpr auto kInitial = 20ms;
  constexpr auto kPeriod = 20ms;
  timer.start();  // the grid starts at new_periodic(), not at the worker's creation
  const auto before = Clock::now();
  TimeoutHandle handle = timer.new_periodic([&] { log.record(); }, kInitial, kPeriod);
  ASSERT_TRUE(wait_until([&] { return log.size() >= 60; }));
  ASSERT_TRUE(handle->cancel());
  const auto runs = log.runs();
  // Run i is due at first + i * period at the earliest (skipped periods only make it later).
  for (std::size_t i = 0; i < runs.size(); ++i) {
    ASSERT_GE(runs[i] - before, kInitial + kPeriod * static_cast<int>(i)) << "run " << i;
  }
  // Fixed rate: runs stay near their grid points (a tick late, more on a loaded machine)
  // instead of drifting by a tick per run, which spreads them over the whole period.
  EXPECT_LT(median_phase(runs, before + kInitial, kPeriod), 7ms);
}

TEST_P(PeriodicTest, CountsAsOnePendingTimeoutUntilCancelled) {
  HashedWheelTimer timer(options());
  std::atomic<int> runs{0};
  std::atomic<int> live{0};
  TimeoutHandle handle = timer.new_periodic([&, t = Tracked(&live)] { ++runs; }, 1ms, 2ms);
  EXPECT_TRUE(handle->is_periodic());
  ASSERT_TRUE(wait_until([&] { return runs >= 5; }));
  EXPECT_EQ(timer.pending_timeouts(), 1u);
  EXPECT_FALSE(handle->is_cancelled());
  ASSERT_TRUE(handle->cancel());
  EXPECT_FALSE(handle->cancel());
  EXPECT_TRUE(handle->is_cancelled());
  EXPECT_TRUE(wait_until([&] { return timer.pending_timeouts() == 0 && live == 0; }));
  const int final_runs = runs;
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(runs, final_runs) << "ran after cancel() returned true";
  EXPECT_FALSE(handle->is_expired()) << "a periodic timeout ends cancelled, never expired";
}

TEST_P(PeriodicTest, CancelLetsTheRunningRunFinishAndStopsEveryLaterOne) {
  HashedWheelTimer timer(options());
  std::atomic<int> started{0};
  std::atomic<int> finished{0};
  std::latch in_third_run(1);
  std::latch release(1);
  TimeoutHandle handle = timer.new_periodic(
      [&](Timeout& self) {
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
  ASSERT_TRUE(wait_until([&] { return timer.pending_timeouts() == 0; }));
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(started, 3);
  EXPECT_EQ(finished, 3) << "the run in progress finishes";
}

TEST_P(PeriodicTest, CancelFromItsOwnRunEndsIt) {
  HashedWheelTimer timer(options());
  std::atomic<int> runs{0};
  timer.new_periodic(
      [&](Timeout& self) {
        if (++runs == 5) {
          EXPECT_TRUE(self.cancel());
        }
      },
      0ms, 1ms);
  ASSERT_TRUE(wait_until([&] { return runs >= 5 && timer.pending_timeouts() == 0; }));
  std::this_thread::sleep_for(30ms);
  EXPECT_EQ(runs, 5);
}

TEST_P(PeriodicTest, CancelOfARunAlreadyDueButNotStartedPreventsIt) {
  // A one-shot and a periodic timeout due on the same tick: when the one-shot runs first, the
  // periodic one is already handed to run (expired) but has not started; the one-shot cancels
  // it, so it must never start. Both scheduling orders, since a layout may run a tick's
  // timeouts in either order.
  HashedWheelTimer timer(options(50ms));
  int due_but_not_started = 0;
  for (int i = 0; i < 20; ++i) {
    std::atomic<int> periodic_runs{0};
    std::atomic<int> runs_at_cancel{-1};
    std::atomic<bool> was_due{false};
    auto victim = std::make_shared<TimeoutHandle>();
    std::latch victim_set(1);
    auto canceller = [&, victim] {
      victim_set.wait();
      was_due = (*victim)->is_expired();
      runs_at_cancel = periodic_runs.load();
      EXPECT_TRUE((*victim)->cancel());
    };
    if (i % 2 == 0) {
      timer.new_timeout(canceller, 10ms);
      *victim = timer.new_periodic([&] { ++periodic_runs; }, 10ms, 1h);
    } else {
      *victim = timer.new_periodic([&] { ++periodic_runs; }, 10ms, 1h);
      timer.new_timeout(canceller, 10ms);
    }
    victim_set.count_down();
    ASSERT_TRUE(wait_until([&] { return timer.pending_timeouts() == 0; }));
    EXPECT_EQ(periodic_runs, runs_at_cancel) << "a run started after cancel() returned true";
    due_but_not_started += was_due ? 1 : 0;
  }
  EXPECT_GT(due_but_not_started, 0) << "the race this test is about never happened";
}

TEST_P(PeriodicTest, SlowRunsNeverOverlapAndMissedPeriodsCoalesce) {
  // Each run takes 2.5 periods (50 ms of 20): the periods it overlaps are skipped; the next run
  // starts at the next grid point, not straight after the slow one (no catch-up burst).
  HashedWheelTimer timer(options());
  constexpr auto kPeriod = 20ms;
  RunLog log;
  std::atomic<int> in_flight{0};
  std::atomic<int> max_in_flight{0};
  timer.start();  // the grid starts at new_periodic(), not at the worker's creation
  const auto before = Clock::now();
  TimeoutHandle handle = timer.new_periodic(
      [&] {
        log.record();
        const int now = ++in_flight;
        int seen = max_in_flight.load();
        while (now > seen && !max_in_flight.compare_exchange_weak(seen, now)) {
        }
        std::this_thread::sleep_for(50ms);
        --in_flight;
      },
      kPeriod, kPeriod);
  ASSERT_TRUE(wait_until([&] { return log.size() >= 12; }));
  handle->cancel();
  ASSERT_TRUE(wait_until([&] { return timer.pending_timeouts() == 0; }));
  EXPECT_EQ(max_in_flight, 1);
  const auto runs = log.runs();
  for (std::size_t i = 1; i < runs.size(); ++i) {
    EXPECT_GE(runs[i] - runs[i - 1], 50ms) << "runs overlapped";
  }
  // A burst would start each run right after the previous returned, 10 ms past a grid point.
  EXPECT_LT(median_phase(runs, before + kPeriod, kPeriod), 7ms);
}

TEST_P(PeriodicTest, PeriodsMissedWhileTheWorkerWasBlockedCoalesce) {
  HashedWheelTimer timer(options());
  constexpr auto kPeriod = 10ms;
  RunLog log;
  TimeoutHandle handle = timer.new_periodic([&] { log.record(); }, kPeriod, kPeriod);
  ASSERT_TRUE(wait_until([&] { return log.size() >= 3; }));
  // A one-shot task blocks the worker for 20 periods.
  std::atomic<Clock::rep> unblocked_at{0};
  timer.new_timeout(
      [&] {
        std::this_thread::sleep_for(200ms);
        unblocked_at = Clock::now().time_since_epoch().count();
      },
      0ms);
  ASSERT_TRUE(wait_until([&] { return unblocked_at.load() != 0; }));
  const auto unblocked = Clock::time_point(Clock::duration(unblocked_at.load()));
  ASSERT_TRUE(wait_until([&] {
    const auto runs = log.runs();
    return runs.back() > unblocked + 60ms;
  }));
  handle->cancel();
  const auto runs = log.runs();
  const auto after_block = std::count_if(runs.begin(), runs.end(), [&](Clock::time_point t) {
    return t >= unblocked && t < unblocked + 20ms;
  });
  // Coalescing: the late run once, then the grid (two or three runs in 20 ms). A catch-up
  // burst would run the ~20 missed periods back to back.
  EXPECT_GE(after_block, 1);
  EXPECT_LE(after_block, 4);
}

TEST_P(PeriodicTest, InvalidArgumentsThrowAndCountNothing) {
  HashedWheelTimer timer(options());
  EXPECT_THROW(timer.new_periodic([] {}, 1ms, 0ms), std::invalid_argument);
  EXPECT_THROW(timer.new_periodic([] {}, 1ms, -5ms), std::invalid_argument);
  EXPECT_THROW(timer.new_periodic([] {}, 1ms, std::chrono::nanoseconds::min()),
               std::invalid_argument);
  std::function<void()> empty;
  EXPECT_THROW(timer.new_periodic(empty, 1ms, 1ms), std::invalid_argument);
  EXPECT_EQ(timer.pending_timeouts(), 0u);
  // Huge periods are fine: "practically never again".
  std::atomic<int> runs{0};
  TimeoutHandle h = timer.new_periodic([&] { ++runs; }, 0ms, std::chrono::hours::max());
  ASSERT_TRUE(wait_until([&] { return runs == 1; }));
  std::this_thread::sleep_for(30ms);
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(timer.pending_timeouts(), 1u);
  EXPECT_TRUE(h->cancel());
}

TEST_P(PeriodicTest, StopReturnsItsJobWhichRunsOnceWithoutRearming) {
  HashedWheelTimer timer(options());
  std::atomic<int> runs{0};
  TimeoutHandle handle = timer.new_periodic([&] { ++runs; }, 1h, 1ms);
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

// A tiny pool of std::function<void()> tasks, the kind a TimerJob must be wrapped for.
class FunctionPool {
 public:
  explicit FunctionPool(int threads) {
    for (int i = 0; i < threads; ++i) {
      threads_.emplace_back([this] {
        for (;;) {
          std::function<void()> task;
          {
            std::unique_lock lock(mutex_);
            ready_.wait(lock, [&] { return closed_ || !queue_.empty(); });
            if (queue_.empty()) return;
            task = std::move(queue_.front());
            queue_.erase(queue_.begin());
          }
          task();
        }
      });
    }
  }
  ~FunctionPool() {
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
    }
    ready_.notify_all();
    for (auto& t : threads_) t.join();
  }
  void post(std::function<void()> task) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(task));
    }
    ready_.notify_one();
  }
  // The executor for TimerOptions: TimerJob is move-only, std::function needs a copyable target.
  wheel::TimerExecutor executor() {
    return [this](TimerJob job) {
      auto shared = std::make_shared<TimerJob>(std::move(job));
      post([shared] { (*shared)(); });
    };
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::vector<std::function<void()>> queue_;
  bool closed_ = false;
  std::vector<std::thread> threads_;
};

TEST_P(PeriodicTest, WithAnExecutorRunsNeverOverlapEvenOnManyThreads) {
  FunctionPool pool(3);
  TimerOptions o = options();
  o.executor = pool.executor();
  HashedWheelTimer timer(o);
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
  ASSERT_TRUE(wait_until([&] { return timer.pending_timeouts() == 0 && live == 0; }));
  const int final_runs = runs;
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(runs, final_runs);
  EXPECT_FALSE(overlapped);
}

TEST_P(PeriodicTest, WithAnExecutorStaysOnItsFixedRateGrid) {
  FunctionPool pool(2);
  TimerOptions o = options();
  o.executor = pool.executor();
  HashedWheelTimer timer(o);
  RunLog log;
  constexpr auto kPeriod = 20ms;
  timer.start();  // the grid starts at new_periodic(), not at the worker's creation
  const auto before = Clock::now();
  TimeoutHandle handle = timer.new_periodic([&] { log.record(); }, kPeriod, kPeriod);
  ASSERT_TRUE(wait_until([&] { return log.size() >= 30; }));
  handle->cancel();
  const auto runs = log.runs();
  for (std::size_t i = 0; i < runs.size(); ++i) {
    ASSERT_GE(runs[i] - before, kPeriod * static_cast<int>(i + 1)) << "run " << i;
  }
  EXPECT_LT(median_phase(runs, before + kPeriod, kPeriod), 7ms);
}

TEST_P(PeriodicTest, AJobDroppedByTheExecutorEndsThePeriodicTimeoutCancelled) {
  std::atomic<int> handed{0};
  TimerOptions o = options();
  o.executor = [&](TimerJob) { ++handed; };  // drops every job
  HashedWheelTimer timer(o);
  std::atomic<int> live{0};
  std::atomic<int> runs{0};
  TimeoutHandle handle = timer.new_periodic([&, t = Tracked(&live)] { ++runs; }, 1ms, 1ms);
  ASSERT_TRUE(wait_until([&] { return handle->is_cancelled(); }));
  EXPECT_TRUE(wait_until([&] { return live == 0 && timer.pending_timeouts() == 0; }));
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(handed, 1);
  EXPECT_EQ(runs, 0);
  EXPECT_FALSE(handle->cancel());
}

TEST_P(PeriodicTest, AThrowingExecutorEndsThePeriodicTimeoutWithAnErrorLog) {
  wheel::testing::LogCapture log;
  TimerOptions o = options();
  o.executor = [](TimerJob) { throw std::runtime_error("pool is closed"); };
  HashedWheelTimer timer(o);
  std::atomic<int> live{0};
  TimeoutHandle handle = timer.new_periodic([t = Tracked(&live)] {}, 1ms, 1ms);
  ASSERT_TRUE(wait_until([&] { return handle->is_cancelled() && live == 0; }));
  EXPECT_EQ(timer.pending_timeouts(), 0u);
  timer.stop();
  EXPECT_EQ(log.count("pool is closed", spdlog::level::err), 1);
}

TEST_P(PeriodicTest, AJobStillAtTheExecutorWhenTheTimerStopsEndsCancelled) {
  // The executor keeps the job; the timer stops and is destroyed; then the job runs: it runs
  // its task once (it was handed over before the stop) and does not re-arm.
  std::mutex mutex;
  std::vector<TimerJob> held;
  TimerOptions o = options();
  o.executor = [&](TimerJob job) {
    std::lock_guard lock(mutex);
    held.push_back(std::move(job));
  };
  std::atomic<int> runs{0};
  std::atomic<int> live{0};
  TimeoutHandle handle;
  {
    HashedWheelTimer timer(o);
    handle = timer.new_periodic([&, t = Tracked(&live)] { ++runs; }, 1ms, 1ms);
    ASSERT_TRUE(wait_until([&] {
      std::lock_guard lock(mutex);
      return held.size() == 1;
    }));
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

INSTANTIATE_TEST_SUITE_P(Layouts, PeriodicTest, wheel::testing::kLayouts,
                         wheel::testing::layout_name);

}  // namespace
