// SPDX-License-Identifier: Apache-2.0
// LoopWheel (wheel/loop_wheel.h) on a hand-moved clock, both layouts: when each task fires,
// next_due(), cancel at every stage, stale handles, scheduling and cancelling from tasks, the
// budget of advance(). Nothing here reads a real clock or sleeps.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "support/timer_layouts.h"
#include "wheel/loop_wheel.h"
#include "wheel/rejected_execution_error.h"

namespace wheel {
namespace {

using namespace std::chrono_literals;
using Time = LoopWheel::Time;

class LoopWheelTest : public ::testing::TestWithParam<TimerLayout> {
 protected:
  LoopWheelOptions options(std::size_t buckets = 8) const {
    return testing::small_wheel<LoopWheelOptions>(buckets, GetParam());
  }
};

INSTANTIATE_TEST_SUITE_P(Layouts, LoopWheelTest, wheel::testing::kLayouts,
                         wheel::testing::layout_name);

// Advancing 1 ms at a time, the task of deadline d fires at the first whole tick after it:
// at ceil-to-tick(d + 1 ns), i.e. (floor(d / tick) + 1) ticks. Delays span several turns of an
// 8-bucket wheel (rounds, cascades) and wrap-around of the bucket index.
TEST_P(LoopWheelTest, EachTaskFiresAtTheEndOfItsDeadlinesTick) {
  LoopWheel wheel(options(8));
  std::vector<Time> fired_at(200, Time(-1));
  Time now{0};
  for (int i = 0; i < 200; ++i) {
    wheel.schedule_at([&, i] { fired_at[i] = now; }, Time(std::chrono::microseconds(i * 997)));
  }
  EXPECT_EQ(wheel.pending(), 200u);
  for (int step = 0; step <= 200; ++step) {
    now = Time(std::chrono::milliseconds(step));
    wheel.advance(now);
  }
  for (int i = 0; i < 200; ++i) {
    const auto deadline = std::chrono::microseconds(i * 997);
    const auto expected = std::chrono::duration_cast<std::chrono::milliseconds>(deadline) + 1ms;
    EXPECT_EQ(fired_at[i], Time(expected)) << "deadline " << deadline.count() << " us";
  }
  EXPECT_EQ(wheel.pending(), 0u);
  EXPECT_FALSE(wheel.next_due());
}

// Table: (advance to t, schedule delay d) -> fires when advance() first reaches k.
TEST_P(LoopWheelTest, TableOfScheduleTimeAndDelayToFiringTime) {
  struct Row {
    int at_ms, delay_ms, fires_ms;
  };
  const Row rows[] = {
      {0, 0, 1},                             // due at once: the end of the current tick
      {0, 1, 2},                             // deadline 1 ms lies in tick 1, which ends at 2 ms
      {3, 0, 4},     {3, 5, 9}, {5, 7, 13},  // crosses the end of the first turn
      {7, 8, 16},                            // exactly one turn later (same bucket)
      {2, 30, 33},                           // several rounds / a cascade from level 1
      {9, 64, 74},                           // a level-2 timeout (8^2 ticks)
      {1, 600, 602},                         // level 3, cascades twice
      {0, -5, 1},                            // negative: at once
  };
  for (const Row& r : rows) {
    LoopWheel wheel(options(8));
    int fired = -1;
    wheel.advance(Time(std::chrono::milliseconds(r.at_ms)));
    wheel.schedule_after([&] { fired = 1; }, std::chrono::milliseconds(r.delay_ms));
    for (int t = r.at_ms; t <= r.fires_ms + 10 && fired < 0; ++t) {
      wheel.advance(Time(std::chrono::milliseconds(t)));
      if (fired > 0) fired = t;
    }
    EXPECT_EQ(fired, r.fires_ms) << "at " << r.at_ms << " delay " << r.delay_ms;
  }
}

// One big jump runs everything due, in deadline order, and next_due() names the tick end.
TEST_P(LoopWheelTest, ABigJumpRunsEverythingInDeadlineOrderAndNextDueIsExact) {
  LoopWheel wheel(options(4));
  std::vector<int> order;
  for (int d : {50, 3, 17, 3, 1000, 9}) {
    wheel.schedule_after([&order, d] { order.push_back(d); }, std::chrono::milliseconds(d));
  }
  ASSERT_TRUE(wheel.next_due());
  EXPECT_EQ(*wheel.next_due(), Time(4ms));  // deadline 3 ms: tick 3 ends at 4 ms
  EXPECT_EQ(wheel.advance(Time(3ms)), 0u) << "tick 3 has not passed yet";
  EXPECT_EQ(wheel.advance(Time(60ms)), 5u);
  EXPECT_EQ(order, (std::vector<int>{3, 3, 9, 17, 50}));
  // A driver that sleeps until next_due() each time: the hint may come early (a cascade, a
  // round to check) but never late, and the task fires exactly at the end of its tick.
  int wake_ups = 0;
  while (order.size() < 6 && wake_ups < 100) {
    ASSERT_TRUE(wheel.next_due());
    const Time at = *wheel.next_due();
    EXPECT_LE(at, Time(1001ms));
    wheel.advance(at);
    ++wake_ups;
    if (order.size() == 6) {
      EXPECT_EQ(at, Time(1001ms));
    }
  }
  EXPECT_EQ(order.size(), 6u);
  EXPECT_FALSE(wheel.next_due());
}

TEST_P(LoopWheelTest, CancelBeforeDueAfterAndStaleHandles) {
  LoopWheel wheel(options(8));
  int ran = 0;
  LoopWheel::Handle early = wheel.schedule_after([&] { ++ran; }, 2ms);
  LoopWheel::Handle far = wheel.schedule_after([&] { ++ran; }, 500ms);  // rounds / a cascade
  EXPECT_TRUE(wheel.is_pending(far));
  EXPECT_TRUE(wheel.cancel(far));
  EXPECT_FALSE(wheel.cancel(far)) << "only the call that cancelled returns true";
  EXPECT_FALSE(wheel.is_pending(far));
  wheel.advance(Time(100ms));
  EXPECT_EQ(ran, 1);
  EXPECT_FALSE(wheel.cancel(early)) << "ran already";
  // The slot of `early` is reused by the next timeout: the stale handle must not cancel it.
  LoopWheel::Handle reused = wheel.schedule_after([&] { ++ran; }, 1ms);
  EXPECT_FALSE(wheel.cancel(early));
  EXPECT_FALSE(wheel.cancel(far));
  EXPECT_FALSE(wheel.cancel(LoopWheel::Handle{}));
  EXPECT_TRUE(wheel.is_pending(reused));
  wheel.advance(Time(200ms));
  EXPECT_EQ(ran, 2);
  EXPECT_EQ(wheel.pending(), 0u);
}

// Cancel at every stage of a cascade: for each tick at which the cancel happens, the task
// never runs and the wheel is empty afterwards.
TEST_P(LoopWheelTest, CancelAtEveryTickBeforeItFiresLeavesNothing) {
  for (int cancel_at = 0; cancel_at < 75; ++cancel_at) {
    LoopWheel wheel(options(4));
    bool ran = false;
    LoopWheel::Handle h = wheel.schedule_after([&] { ran = true; }, 74ms);  // fires at 75 ms
    for (int t = 0; t <= 80; ++t) {
      if (t == cancel_at) {
        EXPECT_TRUE(wheel.cancel(h)) << t;
      }
      wheel.advance(Time(std::chrono::milliseconds(t)));
    }
    EXPECT_FALSE(ran) << "cancelled at " << cancel_at;
    EXPECT_EQ(wheel.pending(), 0u);
    EXPECT_FALSE(wheel.next_due());
  }
}

TEST_P(LoopWheelTest, ATaskCancellingADueNeighbourStopsIt) {
  LoopWheel wheel(options(8));
  std::vector<std::string> log;
  LoopWheel::Handle second;
  wheel.schedule_after(
      [&] {
        log.push_back("first");
        EXPECT_TRUE(wheel.cancel(second)) << "due but not started: cancellable";
      },
      5ms);
  second = wheel.schedule_after([&] { log.push_back("second"); }, 5ms);
  wheel.advance(Time(10ms));
  EXPECT_EQ(log, std::vector<std::string>{"first"});
  EXPECT_EQ(wheel.pending(), 0u);
}

TEST_P(LoopWheelTest, ATasksOwnHandleNoLongerCancelsOnceItRuns) {
  LoopWheel wheel(options(8));
  bool own_cancel = true;
  LoopWheel::Handle seen;
  const LoopWheel::Handle h = wheel.schedule_after(
      [&](LoopWheel::Handle self) {
        seen = self;
        own_cancel = wheel.cancel(self);
      },
      1ms);
  wheel.advance(Time(5ms));
  EXPECT_EQ(seen, h);
  EXPECT_FALSE(own_cancel);
}

TEST_P(LoopWheelTest, TasksScheduledDuringAdvanceRunOnALaterTickOfTheSameAdvanceIfDue) {
  LoopWheel wheel(options(8));
  std::vector<Time> runs;
  // Each run reschedules with a deadline already past: it lands on the next tick.
  std::function<void()> again = [&] {
    runs.push_back(wheel.now());
    if (runs.size() < 5) wheel.schedule_at(again, Time(0));
  };
  wheel.schedule_at(again, Time(0));
  EXPECT_EQ(wheel.advance(Time(3ms)), 3u) << "ticks 0, 1, 2 have passed: one run on each";
  EXPECT_EQ(wheel.advance(Time(3ms)), 0u);
  EXPECT_EQ(wheel.advance(Time(20ms)), 2u);
  EXPECT_EQ(runs.size(), 5u);
}

TEST_P(LoopWheelTest, TheBudgetLeavesTheRestForLaterCallsInOrder) {
  LoopWheel wheel(options(8));
  std::vector<int> order;
  for (int i = 0; i < 10; ++i) {
    wheel.schedule_after([&order, i] { order.push_back(i); }, std::chrono::milliseconds(i % 3));
  }
  EXPECT_EQ(wheel.advance(Time(50ms), 4), 4u);
  EXPECT_EQ(wheel.pending(), 6u);
  EXPECT_EQ(wheel.next_due(), Time(50ms)) << "the rest is due now";
  EXPECT_EQ(wheel.advance(Time(50ms), 4), 4u);
  EXPECT_EQ(wheel.advance(Time(50ms), 4), 2u);
  EXPECT_EQ(wheel.advance(Time(50ms), 4), 0u);
  // Tick by tick (0, 3, 6, 9 due first, then 1, 4, 7, then 2, 5, 8); within a tick the order
  // is unspecified.
  ASSERT_EQ(order.size(), 10u);
  for (std::size_t i = 0; i < order.size(); ++i) {
    EXPECT_EQ(order[i] % 3, i < 4 ? 0 : i < 7 ? 1 : 2) << "position " << i;
  }
  EXPECT_FALSE(wheel.next_due());
}

TEST_P(LoopWheelTest, ATimeoutLeftOnTheReadyListCanStillBeCancelled) {
  LoopWheel wheel(options(8));
  int ran = 0;
  wheel.schedule_after([&] { ++ran; }, 1ms);
  const LoopWheel::Handle h = wheel.schedule_after([&] { ++ran; }, 1ms);
  EXPECT_EQ(wheel.advance(Time(5ms), 1), 1u);
  EXPECT_TRUE(wheel.cancel(h));
  EXPECT_EQ(wheel.pending(), 0u);
  EXPECT_EQ(wheel.advance(Time(5ms)), 0u);
  EXPECT_EQ(ran, 1);
}

TEST_P(LoopWheelTest, DestructionAndClearDestroyTasksUnrun) {
  auto token = std::make_shared<int>(0);
  {
    LoopWheel wheel(options(8));
    wheel.schedule_after([token] { ADD_FAILURE(); }, 1h);
    wheel.schedule_after([token] { ADD_FAILURE(); }, 1ms);
    wheel.schedule_after([token] { ADD_FAILURE(); }, 1ms);
    EXPECT_EQ(token.use_count(), 4);
    wheel.clear();
    EXPECT_EQ(token.use_count(), 1);
    EXPECT_EQ(wheel.pending(), 0u);
    wheel.schedule_after([token] {}, 1ms);
    wheel.schedule_after([token] { ADD_FAILURE(); }, 2ms);
    EXPECT_EQ(wheel.advance(Time(2ms), 1), 1u);  // the second stays on the ready list
  }                                              // and the destructor destroys it unrun
  EXPECT_EQ(token.use_count(), 1);
}

TEST_P(LoopWheelTest, AdvanceFromATaskThrowsAndTimeNeverGoesBack) {
  LoopWheel wheel(options(8), Time(1s));
  bool threw = false;
  wheel.schedule_after(
      [&] {
        try {
          wheel.advance(Time(2s));
        } catch (const std::logic_error&) {
          threw = true;
        }
      },
      1ms);
  wheel.advance(Time(1s + 5ms));
  EXPECT_TRUE(threw);
  wheel.advance(Time(0s));
  EXPECT_EQ(wheel.now(), Time(1s + 5ms));
}

TEST_P(LoopWheelTest, ExceptionsFromTasksAreCaughtAndTheRestRuns) {
  LoopWheel wheel(options(8));
  bool after = false;
  wheel.schedule_after([] { throw std::runtime_error("boom"); }, 1ms);
  wheel.schedule_after([&] { after = true; }, 1ms);
  EXPECT_EQ(wheel.advance(Time(5ms)), 2u);
  EXPECT_TRUE(after);
}

TEST_P(LoopWheelTest, MaxPendingAndInvalidOptions) {
  LoopWheelOptions o = options(8);
  o.max_pending_timeouts = 2;
  LoopWheel wheel(o);
  wheel.schedule_after([] {}, 1ms);
  const LoopWheel::Handle h = wheel.schedule_after([] {}, 1ms);
  EXPECT_THROW(wheel.schedule_after([] {}, 1ms), RejectedExecutionError);
  EXPECT_EQ(wheel.pending(), 2u);
  wheel.cancel(h);
  EXPECT_NO_THROW(wheel.schedule_after([] {}, 1ms));
  std::function<void()> empty;
  EXPECT_THROW(wheel.schedule_after(empty, 1ms), std::invalid_argument);

  LoopWheelOptions bad = options(8);
  bad.ticks_per_wheel = 0;
  EXPECT_THROW(LoopWheel{bad}, std::invalid_argument);
  bad = options(8);
  bad.tick_duration = 0ms;
  EXPECT_THROW(LoopWheel{bad}, std::invalid_argument);
}

TEST_P(LoopWheelTest, HugeDeadlinesSaturateAndNeverFireSoon) {
  LoopWheel wheel(options(8), Time(-5s));  // any origin, negative too
  bool ran = false;
  wheel.schedule_after([&] { ran = true; }, std::chrono::hours(24 * 365 * 200));
  ASSERT_TRUE(wheel.next_due());
  EXPECT_GT(*wheel.next_due(), Time(std::chrono::hours(24 * 365 * 100)));
  wheel.advance(Time(std::chrono::hours(24 * 365)));
  EXPECT_FALSE(ran);
  EXPECT_EQ(wheel.pending(), 1u);
}

}  // namespace
}  // namespace wheel
