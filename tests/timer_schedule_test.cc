// SPDX-License-Identifier: Apache-2.0
// HashedWheelTimer: when a timeout runs. Every test drives a wheel::ManualClock by hand (no
// worker thread, nothing waits on real time) and runs once per layout: rounds, cascades and
// wrap-around, never early and exactly on the tick after the deadline, zero, negative and huge
// delays, the per-tick transfer cap, and the ticks an idle timer would wake for.
#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <random>
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

class TimerScheduleTest : public TimerTest {
 protected:
  // options_with(1 ms, `buckets`) whose tick observer counts the ticks processed in `processed`.
  TimerOptions counting_ticks(std::size_t buckets, int& processed) {
    TimerOptions options = options_with(1ms, buckets);
    options.tick_observer = [&processed](std::chrono::nanoseconds) { ++processed; };
    return options;
  }
};

// ---------------------------------------------------------------- rounds, cascades, wrap-around

TEST_P(TimerScheduleTest, ManyTimeoutsAliveTogetherEachRunOnTheTickAfterItsDeadline) {
  // One timer, tick 1 ms, 4 buckets (hierarchical: a level every factor of 4), all rows alive
  // at once: each is scheduled when the clock reads `at`, with `delay`, and must run when the
  // clock, moved 1 ms at a time, first reads floor((at + delay) / 1 ms) + 1 ms (never before
  // at + 1 ms). Delays span many turns of the 4 buckets (rounds), levels 1 to 4 (cascades) and
  // bucket indexes that wrap around while others wait.
  struct Row {
    long long at_ms;
    std::chrono::nanoseconds delay;
    long long runs_at_ms;
  };
  const Row rows[] = {
      {0, 0ms, 1},      {0, 3ms, 4},        {0, 4ms, 5},      {0, 5ms, 6},       {0, 95ms, 96},
      {1, 15ms, 17},    {1, 16ms, 18},      {2, 63ms, 66},    {2, 64ms, 67},     {3, 2500us, 6},
      {3, 1ms, 5},      {5, 255ms, 261},    {5, 256ms, 262},  {6, 1023ms, 1030}, {7, 300ms, 308},
      {9, -4ms, 10},    {10, 700ms, 711},   {13, 3999us, 17}, {17, 4ms, 22},     {21, 1000ms, 1022},
      {33, 127ms, 161}, {40, 1024ms, 1065}, {64, 64ms, 129},  {100, 0ms, 101},
  };
  ManualClock clock;
  HashedWheelTimer timer(options_with(1ms, 4), clock);
  timer.start();
  std::vector<long long> ran_at(std::size(rows), -1);
  for (long long t = 0; t <= 1100; ++t) {
    clock.advance_to(std::chrono::milliseconds(t));
    for (std::size_t i = 0; i < std::size(rows); ++i) {
      if (rows[i].at_ms != t) continue;
      timer.new_timeout([&, i] { ran_at[i] = ms_of(clock.now()); }, rows[i].delay);
    }
  }
  for (std::size_t i = 0; i < std::size(rows); ++i) {
    EXPECT_EQ(ran_at[i], rows[i].runs_at_ms)
        << "scheduled at " << rows[i].at_ms << " ms with delay " << rows[i].delay.count() << " ns";
  }
  EXPECT_EQ(timer.pending_timeouts(), 0u);
}

TEST_P(TimerScheduleTest, TimeoutBeyondOneRevolutionWaitsItsRounds) {
  // 4 buckets of 10 ms: a 95 ms delay goes round the wheel twice, then runs at the end of the
  // tick holding 95 ms, 100 ms.
  ManualClock clock;
  HashedWheelTimer timer(options_with(10ms, 4), clock);
  long long fired_at = -1;
  timer.new_timeout([&] { fired_at = ms_of(clock.now()); }, 95ms);
  ASSERT_TRUE(step_until(clock, 1ms, 200, [&] { return fired_at >= 0; }));
  EXPECT_EQ(fired_at, 100);
}

TEST_P(TimerScheduleTest, DelaysAcrossManyRoundsRunInDeadlineOrder) {
  ManualClock clock;
  HashedWheelTimer timer(options_with(1ms, 8), clock);
  std::vector<int> order;
  std::vector<long long> at;
  for (int delay : {70, 5, 33, 17, 50, 9, 41}) {
    timer.new_timeout(
        [&, delay] {
          order.push_back(delay);
          at.push_back(ms_of(clock.now()));
        },
        std::chrono::milliseconds(delay));
  }
  ASSERT_TRUE(step_until(clock, 1ms, 100, [&] { return order.size() == 7; }));
  EXPECT_EQ(order, (std::vector<int>{5, 9, 17, 33, 41, 50, 70}));
  EXPECT_EQ(at, (std::vector<long long>{6, 10, 18, 34, 42, 51, 71}));
}

// ---------------------------------------------------------------- never early, one tick late

TEST_P(TimerScheduleTest, EveryTimeoutRunsOnTheFirstTickBoundaryAfterItsDeadline) {
  // 2,000 random delays (microseconds, up to 30 ticks of 10 ms), the clock moved 1 ms at a time:
  // each runs when the clock first reads (floor(deadline / tick) + 1) x tick: never early, and
  // late by less than a tick.
  ManualClock clock;
  HashedWheelTimer timer(options_with(10ms), clock);
  constexpr int kCount = 2'000;
  std::vector<std::chrono::nanoseconds> due(kCount), ran(kCount, -1ns);
  std::minstd_rand random(7);
  int runs = 0;
  for (int i = 0; i < kCount; ++i) {
    due[i] = std::chrono::microseconds(random() % 300'000);
    timer.new_timeout(
        [&, i] {
          ran[i] = clock.now();
          ++runs;
        },
        due[i]);
  }
  ASSERT_TRUE(step_until(clock, 1ms, 400, [&] { return runs == kCount; }));
  for (int i = 0; i < kCount; ++i) {
    ASSERT_EQ(ran[i], (due[i] / 10ms + 1) * 10ms) << "deadline " << due[i].count() << " ns";
  }
}

TEST_P(TimerScheduleTest, ZeroAndNegativeDelaysRunOnTheNextTick) {
  ManualClock clock;
  HashedWheelTimer timer(options_with(20ms), clock);
  timer.start();
  clock.advance(30ms);  // off the tick grid
  int runs = 0;
  timer.new_timeout([&] { ++runs; }, 0ms);
  timer.new_timeout([&] { ++runs; }, -5s);
  timer.new_timeout([&] { ++runs; }, std::chrono::nanoseconds::min());
  timer.new_timeout([&] { ++runs; }, std::chrono::hours::min());
  clock.advance(9ms);  // 39 ms: tick 1 (20-40 ms) has not ended
  EXPECT_EQ(runs, 0);
  clock.advance(1ms);  // 40 ms
  EXPECT_EQ(runs, 4);
}

TEST_P(TimerScheduleTest, HugeDelaysNeverOverflow) {
  ManualClock clock;
  HashedWheelTimer timer(options_with(1ms), clock);
  int runs = 0;
  std::vector<TimeoutHandle> handles;
  handles.push_back(timer.new_timeout([&] { ++runs; }, std::chrono::nanoseconds::max()));
  handles.push_back(timer.new_timeout([&] { ++runs; }, std::chrono::hours::max()));
  handles.push_back(timer.new_timeout([&] { ++runs; }, std::chrono::duration<double>(1e300)));
  handles.push_back(timer.new_timeout([&] { ++runs; }, std::chrono::years(1000)));
  for (int i = 0; i < 100; ++i) clock.advance(1ms);
  clock.advance(24h);  // far, but short of every deadline
  EXPECT_EQ(runs, 0);
  EXPECT_EQ(timer.pending_timeouts(), 4u);
  for (auto& handle : handles) EXPECT_TRUE(handle->cancel());
  clock.advance(1ms);
  EXPECT_EQ(timer.pending_timeouts(), 0u);
}

// ---------------------------------------------------------------- the per-tick transfer cap

TEST_P(TimerScheduleTest, OneTickMovesAtMostAHundredThousandNewTimeouts) {
  // 200,000 timeouts due at once: the first 100,000 (in submission order) are moved into the
  // wheel and run on one tick, the rest on the next.
  ManualClock clock;
  HashedWheelTimer timer(options_with(100ms), clock);
  constexpr int kCount = 200'000;
  std::vector<long long> ran_at(kCount, -1);
  for (int i = 0; i < kCount; ++i) {
    timer.new_timeout([&, i] { ran_at[i] = ms_of(clock.now()); }, 0ms);
  }
  clock.advance(100ms);
  EXPECT_EQ(std::count(ran_at.begin(), ran_at.end(), 100), 100'000);
  clock.advance(100ms);
  EXPECT_TRUE(
      std::all_of(ran_at.begin(), ran_at.begin() + 100'000, [](long long t) { return t == 100; }));
  EXPECT_TRUE(std::all_of(ran_at.begin() + 100'000, ran_at.end(), [](long long t) {
    return t == 200;
  })) << "all were transferred in one tick: no cap";
}

// ---------------------------------------------------------------- the task

TEST_P(TimerScheduleTest, AcceptsMoveOnlyTasksAndBothCallForms) {
  ManualClock clock;
  HashedWheelTimer timer(options_with(1ms), clock);
  int value = 0;
  auto payload = std::make_unique<int>(40);
  timer.new_timeout([p = std::move(payload), &value] { value += *p; }, 1ms);
  timer.new_timeout([&value](Timeout& self) { value += self.is_expired() ? 2 : 100; }, 1ms);
  clock.advance(2ms);
  EXPECT_EQ(value, 42);
}

TEST_P(TimerScheduleTest, EmptyCallableThrowsInvalidArgument) {
  ManualClock clock;
  HashedWheelTimer timer(options_with(1ms), clock);
  std::function<void()> empty;
  EXPECT_THROW(timer.new_timeout(empty, 1ms), std::invalid_argument);
  void (*null_function)() = nullptr;
  EXPECT_THROW(timer.new_timeout(null_function, 1ms), std::invalid_argument);
  EXPECT_EQ(timer.pending_timeouts(), 0u);
}

TEST_P(TimerScheduleTest, ThrowingTaskIsLoggedAndTheTimerCarriesOn) {
  wheel::testing::LogCapture log;
  ManualClock clock;
  HashedWheelTimer timer(options_with(1ms), clock);
  bool later_ran = false;
  timer.new_timeout([] { throw std::runtime_error("boom"); }, 1ms);
  timer.new_timeout([] { throw 42; }, 2ms);
  timer.new_timeout([&] { later_ran = true; }, 3ms);
  clock.advance(4ms);
  EXPECT_TRUE(later_ran);
  EXPECT_EQ(timer.pending_timeouts(), 0u);
  EXPECT_EQ(log.count("boom", spdlog::level::warn), 1);
  EXPECT_EQ(log.count("non-standard exception", spdlog::level::warn), 1);
}

// ---------------------------------------------------------------- the ticks the worker wakes for

// The tick observer sees every tick the timer processes: the ticks its worker would wake for.
// The worker sleeps until the tick ticks_to_next_event() names, the same decision
// process_due_ticks() makes here, so these counts are its wake-ups, deterministically.
TEST_P(TimerScheduleTest, IdleTimerProcessesNoTicks) {
  ManualClock clock;
  int processed = 0;
  HashedWheelTimer timer(counting_ticks(512, processed), clock);
  timer.start();
  for (int i = 0; i < 500; ++i) clock.advance(1ms);  // 500 ticks, one at a time
  EXPECT_EQ(processed, 0) << "an empty timer woke for empty ticks";
  clock.advance(10s);
  EXPECT_EQ(processed, 0);
  // After work, idle again: a timeout runs, then nothing more is processed.
  bool ran = false;
  timer.new_timeout([&] { ran = true; }, 5ms);
  for (int i = 0; i < 500; ++i) clock.advance(1ms);
  EXPECT_TRUE(ran);
  EXPECT_LE(processed, 2) << "the submission's tick and the due tick, nothing else";
}

TEST_P(TimerScheduleTest, TimerSkipsEmptyTicksUntilTheNextDueBucket) {
  ManualClock clock;
  int processed = 0;
  HashedWheelTimer timer(counting_ticks(4096, processed), clock);
  bool ran = false;
  timer.new_timeout([&] { ran = true; }, 600ms);  // due at the end of tick 600
  for (int t = 1; t <= 600; ++t) {
    clock.advance(1ms);
    ASSERT_FALSE(ran) << "ran early, at " << t << " ms";
  }
  EXPECT_LE(processed, 1) << "processed empty ticks: only the submission's tick may count";
  clock.advance(1ms);
  EXPECT_TRUE(ran);
  EXPECT_LE(processed, 2);
}

TEST_P(TimerScheduleTest, TicksKeepTheirPhaseAcrossIdlePeriods) {
  // Ticks sit at start + k * tick even after the timer idled with nothing pending, so a
  // timeout runs at the first tick boundary after its deadline, never a tick (or an idle
  // period's remainder) later.
  constexpr auto kTick = 200ms;
  ManualClock clock;
  HashedWheelTimer timer(options_with(kTick), clock);
  timer.start();
  for (auto idle : {130ms, 290ms, 70ms, 400ms}) {
    for (auto t = 0ms; t < idle; t += 7ms) clock.advance(7ms);  // nothing pending, off-grid
    const auto scheduled_at = clock.now();
    std::chrono::nanoseconds fired_at{-1};
    timer.new_timeout([&] { fired_at = clock.now(); }, 1ms);
    step_until(clock, 1ms, 1000, [&] { return fired_at.count() >= 0; });
    const auto boundary = (scheduled_at + 1ms) / kTick * kTick + kTick;
    EXPECT_EQ(fired_at, std::chrono::nanoseconds(boundary))
        << "scheduled at " << scheduled_at.count() << "ns after start";
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, TimerScheduleTest, kLayouts, wheel::testing::layout_name);

}  // namespace
}  // namespace wheel::testing
