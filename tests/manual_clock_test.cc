// SPDX-License-Identifier: Apache-2.0
// How to test code built on the timer without waiting: a wheel::ManualClock (wheel/manual_clock.h)
// moved by hand. Users copy this pattern; it is also the timer's own deterministic table test of
// both layouts: (delay d scheduled at time t) -> the clock reading at which the task runs.
#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "support/timer_layouts.h"
#include "wheel/hashed_wheel_timer.h"
#include "wheel/loop_wheel.h"
#include "wheel/manual_clock.h"

namespace wheel {
namespace {

using namespace std::chrono_literals;

// The example: a session that expires after 30 s of silence, tested in microseconds.
TEST(ManualClockExample, AHashedWheelTimerOnAManualClockRunsTasksWhenTheTestSays) {
  ManualClock clock;
  TimerOptions options;
  options.tick_duration = 10ms;
  HashedWheelTimer timer(options, clock);  // no worker thread: the clock drives it
  bool expired = false;
  timer.new_timeout([&] { expired = true; }, 30s);
  clock.advance(29s);
  EXPECT_FALSE(expired);
  clock.advance(1s + 10ms);  // past the deadline and the end of its tick
  EXPECT_TRUE(expired);
  EXPECT_EQ(timer.pending_timeouts(), 0u);
  EXPECT_THROW(timer.drain(), std::logic_error) << "nothing would move the clock while it waits";
}

TEST(ManualClockExample, ALoopWheelTakesTheClocksReading) {
  ManualClock clock(5s);  // any start
  LoopWheel wheel(LoopWheelOptions{}, clock.now());
  int runs = 0;
  wheel.schedule_after([&] { ++runs; }, 100ms);
  clock.advance(100ms);
  wheel.advance(clock.now());
  EXPECT_EQ(runs, 0) << "its tick has not ended yet";
  clock.advance(1ms);
  wheel.advance(clock.now());
  EXPECT_EQ(runs, 1);
}

TEST(ManualClockExample, BadStepsThrow) {
  ManualClock clock(1s);
  EXPECT_THROW(clock.advance(-1ns), std::invalid_argument);
  EXPECT_THROW(clock.advance_to(999ms), std::invalid_argument);
  clock.advance_to(2s);
  EXPECT_EQ(clock.now(), 2s);
}

// A task that moves the clock would run the timer inside its own step: advance() refuses with
// std::logic_error, the clock keeps its reading, and the next advance() from outside works.
TEST(ManualClockExample, AdvanceFromATaskThrowsAndLeavesTheClockUsable) {
  ManualClock clock;
  TimerOptions options;
  options.tick_duration = 1ms;
  HashedWheelTimer timer(options, clock);
  timer.start();
  int refused = 0;
  std::chrono::nanoseconds seen{-1};
  auto reenter = [&] {
    const auto before = clock.now();
    try {
      clock.advance(1s);
    } catch (const std::logic_error&) {
      ++refused;
    }
    seen = clock.now() - before;
  };
  timer.new_timeout(reenter, 1ms);
  clock.advance(5ms);
  EXPECT_EQ(refused, 1);
  EXPECT_EQ(seen, 0ns) << "the refused call moved the clock";
  EXPECT_EQ(clock.now(), 5ms);
  timer.new_timeout(reenter, 1ms);  // the busy flag was cleared: the same again
  clock.advance(5ms);
  EXPECT_EQ(refused, 2);
  EXPECT_EQ(clock.now(), 10ms);
}

class ManualClockTable : public ::testing::TestWithParam<TimerLayout> {
 protected:
  static TimerOptions small_wheel(std::size_t buckets) {
    return testing::small_wheel<TimerOptions>(buckets, GetParam());
  }
};
INSTANTIATE_TEST_SUITE_P(Layouts, ManualClockTable, wheel::testing::kLayouts,
                         wheel::testing::layout_name);

// HashedWheelTimer, tick 1 ms, 8 buckets, the clock moved 1 ms at a time: a task scheduled at
// t with delay d runs when the clock first reaches floor((t + d) / tick) + 1 ticks — several
// turns (rounds), cascades across levels, wrap-around of the bucket index — and a cancel at
// any step before that keeps it from running.
TEST_P(ManualClockTable, ScheduleAtTWithDelayDRunsAtK) {
  struct Row {
    int at_ms, delay_ms, runs_at_ms;
  };
  const Row rows[] = {{0, 0, 1},   {0, 1, 2},   {3, 5, 9},     {5, 7, 13}, {7, 8, 16},
                      {2, 30, 33}, {9, 64, 74}, {1, 600, 602}, {4, -3, 5}};
  for (const Row& r : rows) {
    ManualClock clock;
    HashedWheelTimer timer(small_wheel(8), clock);
    timer.start();
    clock.advance_to(std::chrono::milliseconds(r.at_ms));
    int ran_at = -1;
    timer.new_timeout([&] { ran_at = static_cast<int>(clock.now() / 1ms); },
                      std::chrono::milliseconds(r.delay_ms));
    for (int t = r.at_ms + 1; t <= r.runs_at_ms + 20 && ran_at < 0; ++t) {
      clock.advance_to(std::chrono::milliseconds(t));
    }
    EXPECT_EQ(ran_at, r.runs_at_ms) << "at " << r.at_ms << " delay " << r.delay_ms;
  }
}

TEST_P(ManualClockTable, CancelAtEveryStepBeforeItRunsKeepsItFromRunning) {
  for (int cancel_at = 0; cancel_at < 74; ++cancel_at) {
    ManualClock clock;
    HashedWheelTimer timer(small_wheel(4), clock);
    bool ran = false;
    TimeoutHandle h = timer.new_timeout([&] { ran = true; }, 73ms);  // runs at 74 ms
    for (int t = 0; t <= 80; ++t) {
      if (t == cancel_at) {
        EXPECT_TRUE(h->cancel()) << t;
      }
      clock.advance_to(std::chrono::milliseconds(t));
    }
    EXPECT_FALSE(ran) << "cancelled at " << cancel_at;
    EXPECT_EQ(timer.pending_timeouts(), 0u);
  }
}

}  // namespace
}  // namespace wheel
