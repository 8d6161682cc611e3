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
#include <wheel/manual_clock.h>

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
  // Where on the grid they fall (a tick late, exactly) is StaysOnItsFixedRateGrid's claim, on a
  // manual clock: a real clock's lateness is the machine's, not the timer's.
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

TEST_P(PeriodicTest, SlowRunsNeverOverlap) {
  // Each run takes 2.5 periods (50 ms of 20): the periods it overlaps are skipped, never run
  // alongside it.
  HashedWheelTimer timer(options());
  constexpr auto kPeriod = 20ms;
  RunLog log;
  std::atomic<int> in_flight{0};
  std::atomic<int> max_in_flight{0};
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
  // That the next run waits for the next grid point (no burst) is
  // ASlowRunCoalescesIntoTheNextGridPoint's claim, on a manual clock.
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
  // burst would run the ~20 missed periods back to back. (A loaded machine only lowers the
  // count; MissedPeriodsCoalesceIntoOneRun pins it exactly on a manual clock.)
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

TEST_P(PeriodicTest, WithAnExecutorRunsAreNeverEarly) {
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

// ---------------------------------------------------------------- on a manual clock
// Where runs fall on the grid, exactly: the clock moves only when the test says, so a run's
// time is the clock's reading, not the machine's promptness. Tick 1 ms: a deadline d runs when
// the clock first reaches floor(d / tick) + 1 ticks (see manual_clock_test.cc).

// The reading (ms) at which a deadline of `deadline` runs with a 1 ms tick.
std::chrono::nanoseconds runs_at(std::chrono::nanoseconds deadline) {
  return deadline / 1ms * 1ms + 1ms;
}

TEST_P(PeriodicTest, StaysOnItsFixedRateGrid) {
  // Period 2.5 ms, not a multiple of the tick: run i is due at 20 ms + i x 2.5 ms, exactly; a
  // re-arm from the run's own time (now + period) drifts by up to a tick per run.
  wheel::ManualClock clock;
  HashedWheelTimer timer(options(), clock);
  constexpr std::chrono::nanoseconds kInitial = 20ms;
  constexpr std::chrono::nanoseconds kPeriod = 2500us;
  std::vector<std::chrono::nanoseconds> runs;
  TimeoutHandle handle =
      timer.new_periodic([&] { runs.push_back(clock.now()); }, kInitial, kPeriod);
  for (int step = 0; step < 300 && runs.size() < 100; ++step) clock.advance(1ms);
  ASSERT_EQ(runs.size(), 100u);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    ASSERT_EQ(runs[i], runs_at(kInitial + kPeriod * static_cast<std::int64_t>(i))) << "run " << i;
  }
  EXPECT_TRUE(handle->cancel());
  timer.stop();
}

TEST_P(PeriodicTest, MissedPeriodsCoalesceIntoOneRun) {
  // The clock jumps 20 periods at once (a worker blocked by another task, a suspended process):
  // one late run, then the next grid point strictly after it, not a burst of 20.
  wheel::ManualClock clock;
  HashedWheelTimer timer(options(), clock);
  std::vector<std::chrono::nanoseconds> runs;
  TimeoutHandle handle = timer.new_periodic([&] { runs.push_back(clock.now()); }, 10ms, 10ms);
  for (int step = 0; step < 11; ++step) clock.advance(1ms);
  ASSERT_EQ(runs, std::vector<std::chrono::nanoseconds>({11ms}));
  clock.advance(200ms);  // now 211 ms: the deadlines 20, 30 ... 210 ms are all due
  EXPECT_EQ(runs, std::vector<std::chrono::nanoseconds>({11ms, 211ms})) << "a catch-up burst";
  for (int step = 0; step < 30; ++step) clock.advance(1ms);  // to 241 ms
  EXPECT_EQ(runs, std::vector<std::chrono::nanoseconds>({11ms, 211ms, 221ms, 231ms, 241ms}))
      << "back on the grid 10 + k x 10 ms";
  EXPECT_TRUE(handle->cancel());
  timer.stop();
}

TEST_P(PeriodicTest, ASlowRunCoalescesIntoTheNextGridPoint) {
  // With an executor the test runs each job when it likes: a run that returns 2.5 periods late
  // (the slow run) makes no second job meanwhile (no overlap), and the next run is due at the
  // next grid point after it returned, not straight away (no burst) and not a period after it
  // (no drift).
  wheel::ManualClock clock;
  std::vector<TimerJob> held;
  TimerOptions o = options();
  o.executor = [&](TimerJob job) { held.push_back(std::move(job)); };
  HashedWheelTimer timer(o, clock);
  std::vector<std::chrono::nanoseconds> runs;
  TimeoutHandle handle = timer.new_periodic([&] { runs.push_back(clock.now()); }, 20ms, 20ms);
  for (int step = 0; step < 21; ++step) clock.advance(1ms);
  ASSERT_EQ(held.size(), 1u) << "handed to the executor at 21 ms";
  for (int step = 0; step < 50; ++step) clock.advance(1ms);  // to 71 ms: 40 and 60 ms pass
  ASSERT_EQ(held.size(), 1u) << "a second run was handed out while the first had not returned";
  TimerJob slow = std::move(held[0]);
  held.clear();
  slow();  // returns at 71 ms
  EXPECT_EQ(timer.pending_timeouts(), 1u);
  for (int step = 0; step < 9; ++step) clock.advance(1ms);  // to 80 ms
  EXPECT_TRUE(held.empty()) << "ran again before the next grid point (80 ms)";
  clock.advance(1ms);  // 81 ms: the 80 ms deadline's tick has ended
  ASSERT_EQ(held.size(), 1u);
  held[0]();
  EXPECT_EQ(runs, std::vector<std::chrono::nanoseconds>({71ms, 81ms}));
  EXPECT_TRUE(handle->cancel());
  timer.stop();
}

TEST_P(PeriodicTest, CancelOfARunDueOnTheSameTickPreventsIt) {
  // CancelOfARunAlreadyDueButNotStartedPreventsIt without the luck: on a manual clock both are
  // due on the same tick for certain. Whichever order the layout runs them in, a run never
  // starts after cancel() returned true, and in at least one order the periodic timeout was
  // already due (expired) when it was cancelled.
  int due_but_not_started = 0;
  for (int order = 0; order < 2; ++order) {
    wheel::ManualClock clock;
    HashedWheelTimer timer(options(50ms), clock);
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
    timer.stop();
  }
  EXPECT_GT(due_but_not_started, 0) << "neither order had the periodic run due at the cancel";
}

TEST_P(PeriodicTest, WithAnExecutorStaysOnItsFixedRateGrid) {
  // Jobs run at the executor up to 3 ms after their hand-over (a busy pool): the grid does not
  // move, run i is still due at 20 ms + i x 7 ms.
  wheel::ManualClock clock;
  std::vector<TimerJob> held;
  TimerOptions o = options();
  o.executor = [&](TimerJob job) { held.push_back(std::move(job)); };
  HashedWheelTimer timer(o, clock);
  std::vector<std::chrono::nanoseconds> handed;
  constexpr std::chrono::nanoseconds kPeriod = 7ms;
  TimeoutHandle handle = timer.new_periodic([] {}, 20ms, kPeriod);
  int delay = 0;
  for (int step = 0; step < 400 && handed.size() < 40; ++step) {
    clock.advance(1ms);
    if (held.empty()) continue;
    ASSERT_EQ(held.size(), 1u) << "two runs at the executor at once";
    if (delay == 0) handed.push_back(clock.now());
    if (delay++ < static_cast<int>(handed.size() % 4)) continue;  // 0..3 ms late
    delay = 0;
    TimerJob job = std::move(held[0]);
    held.clear();
    job();
  }
  ASSERT_EQ(handed.size(), 40u);
  for (std::size_t i = 0; i < handed.size(); ++i) {
    ASSERT_EQ(handed[i], runs_at(20ms + kPeriod * static_cast<std::int64_t>(i))) << "run " << i;
  }
  EXPECT_TRUE(handle->cancel());
  timer.stop();
}

INSTANTIATE_TEST_SUITE_P(Layouts, PeriodicTest, wheel::testing::kLayouts,
                         wheel::testing::layout_name);

}  // namespace
