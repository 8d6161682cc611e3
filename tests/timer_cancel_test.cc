// SPDX-License-Identifier: Apache-2.0
// HashedWheelTimer: cancellation at every stage of a timeout's life, pending_timeouts() and the
// max_pending_timeouts limit. On a wheel::ManualClock, once per layout: the clock says when the
// worker's steps happen, so a cancellation's processing is exactly "on the next tick".
#include <atomic>
#include <chrono>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <wheel/hashed_wheel_timer.h>
#include <wheel/manual_clock.h>

#include "support/timer_fixture.h"

// Inside wheel::testing, the timer's names and the fixture's helpers need no using-declarations.
namespace wheel::testing {
namespace {

using namespace std::chrono_literals;

class TimerCancelTest : public TimerTest {
 protected:
  // options_with(1 ms) and at most `max_pending` timeouts.
  TimerOptions limited_to(std::size_t max_pending) {
    TimerOptions options = options_with(1ms);
    options.max_pending_timeouts = max_pending;
    return options;
  }
};

// ---------------------------------------------------------------- cancel at every stage

TEST_P(TimerCancelTest, CancelAtEachStageKeepsItFromRunningAndFreesItsTaskByTheNextTick) {
  // Tick 1 ms, 4 buckets. A timeout due at the end of tick 40 (several turns ahead; on the
  // hierarchical layout it cascades from level 2) is cancelled when the clock reads `cancel_at`:
  // still in the submission queue (0), in the wheel (1 to 40, across its rounds or cascades),
  // or after it ran (41: cancel() is false). Its task is destroyed on the next tick.
  for (int cancel_at = 0; cancel_at <= 41; ++cancel_at) {
    ManualClock clock;
    HashedWheelTimer timer(options_with(1ms, 4), clock);
    timer.start();
    std::atomic<int> live{0};
    int runs = 0;
    TimeoutHandle h = timer.new_timeout([&, t = Tracked(&live)] { ++runs; }, 40ms);
    for (int t = 1; t <= cancel_at; ++t) clock.advance_to(std::chrono::milliseconds(t));
    const bool cancelled = h->cancel();
    EXPECT_EQ(cancelled, cancel_at <= 40) << "cancelled at " << cancel_at;
    if (cancelled) {
      EXPECT_EQ(live, 1) << "destroyed before the worker processed the cancel";
    }
    clock.advance(1ms);
    EXPECT_EQ(live, 0) << "cancelled at " << cancel_at << ": task not destroyed a tick later";
    EXPECT_EQ(timer.pending_timeouts(), 0u);
    for (int t = 0; t < 50; ++t) clock.advance(1ms);
    EXPECT_EQ(runs, cancelled ? 0 : 1) << "cancelled at " << cancel_at;
    EXPECT_NE(h->is_cancelled(), h->is_expired());
  }
}

TEST_P(TimerCancelTest, TaskCanScheduleAndCancelOnTheWorker) {
  ManualClock clock;
  HashedWheelTimer timer(options_with(1ms), clock);
  int chain = 0;
  bool victim_ran = false;
  TimeoutHandle victim = timer.new_timeout([&] { victim_ran = true; }, 200ms);
  std::function<void(Timeout&)> step = [&](Timeout& self) {
    if (++chain < 5) {
      self.timer().new_timeout(step, 1ms);
    } else {
      EXPECT_TRUE(victim->cancel());
    }
  };
  timer.new_timeout(step, 1ms);
  for (int t = 0; t < 300; ++t) clock.advance(1ms);
  EXPECT_EQ(chain, 5);
  EXPECT_EQ(timer.pending_timeouts(), 0u);
  EXPECT_FALSE(victim_ran);
  EXPECT_TRUE(victim->is_cancelled());
}

TEST_P(TimerCancelTest, TaskCancellingANeighbourOfTheSameTickFailsForEveryOne) {
  // All land on the same tick; the first to run tries to cancel the others, which were already
  // handed to run (expired first, then invoked), so every cancel fails and all ten run.
  ManualClock clock;
  HashedWheelTimer timer(options_with(50ms), clock);
  int runs = 0;
  int cancels_won = 0;
  std::vector<TimeoutHandle> handles(10);
  for (auto& handle : handles) {
    handle = timer.new_timeout(
        [&] {
          if (runs++ == 0) {
            for (auto& other : handles) cancels_won += other->cancel();
          }
        },
        10ms);
  }
  clock.advance(50ms);
  EXPECT_EQ(runs, 10);
  EXPECT_EQ(cancels_won, 0);
  EXPECT_EQ(timer.pending_timeouts(), 0u);
}

TEST_P(TimerCancelTest, CancelsOfTimeoutsDueOnTheTickBeingProcessedCountOnce) {
  // netty#14959: a timeout cancelled while the worker visits its bucket was subtracted twice.
  // A task on tick 4 cancels every timeout due on ticks 4 to 7: those of tick 4 already ran or
  // are handed to run (cancel() false), the others are cancelled. Then the count is exact.
  ManualClock clock;
  HashedWheelTimer timer(options_with(1ms, 4), clock);
  std::vector<TimeoutHandle> handles;
  int runs = 0;
  timer.new_timeout(
      [&] {
        for (auto& handle : handles) handle->cancel();
      },
      4ms);
  for (int i = 0; i < 400; ++i) {
    handles.push_back(timer.new_timeout([&] { ++runs; }, std::chrono::microseconds(4000 + i * 10)));
  }
  std::vector<TimeoutHandle> kept;
  for (int i = 0; i < 10; ++i) kept.push_back(timer.new_timeout([] {}, 1h));
  for (int t = 0; t < 10; ++t) clock.advance(1ms);
  int expired = 0;
  for (const auto& handle : handles) {
    ASSERT_NE(handle->is_expired(), handle->is_cancelled());
    expired += handle->is_expired();
  }
  EXPECT_EQ(runs, expired);
  EXPECT_GT(expired, 0) << "none was due on the cancelling tick";
  EXPECT_EQ(timer.pending_timeouts(), 10u);
}

// ---------------------------------------------------------------- counting and the limit

TEST_P(TimerCancelTest, PendingCountsUntilRunOrCancellationIsProcessed) {
  ManualClock clock;
  HashedWheelTimer timer(options_with(1ms), clock);
  std::vector<TimeoutHandle> handles;
  for (int i = 0; i < 10; ++i) handles.push_back(timer.new_timeout([] {}, 1h));
  std::size_t pending_while_running = 0;
  timer.new_timeout([&] { pending_while_running = timer.pending_timeouts(); }, 1ms);
  EXPECT_EQ(timer.pending_timeouts(), 11u);
  clock.advance(2ms);
  EXPECT_EQ(pending_while_running, 11u) << "a running task still counts until it returns";
  EXPECT_EQ(timer.pending_timeouts(), 10u);
  for (int i = 0; i < 4; ++i) handles[i]->cancel();
  EXPECT_EQ(timer.pending_timeouts(), 10u) << "counted out when the worker processes it";
  clock.advance(1ms);
  EXPECT_EQ(timer.pending_timeouts(), 6u);
}

TEST_P(TimerCancelTest, MaxPendingRejectsWithoutChangingTheCount) {
  ManualClock clock;
  HashedWheelTimer timer(limited_to(3), clock);
  std::vector<TimeoutHandle> handles;
  for (int i = 0; i < 3; ++i) handles.push_back(timer.new_timeout([] {}, 1h));
  EXPECT_THROW(timer.new_timeout([] {}, 1h), wheel::RejectedExecutionError);
  EXPECT_THROW(timer.new_periodic([] {}, 1h, 1h), wheel::RejectedExecutionError);
  EXPECT_EQ(timer.pending_timeouts(), 3u);
  std::string message;
  try {
    timer.new_timeout([] {}, 1h);
  } catch (const std::runtime_error& e) {  // RejectedExecutionError is a runtime_error
    message = e.what();
  }
  EXPECT_NE(message.find("max_pending_timeouts"), std::string::npos)
      << "no RejectedExecutionError naming the option, got '" << message << "'";
  EXPECT_EQ(timer.pending_timeouts(), 3u);
  handles[0]->cancel();
  clock.advance(1ms);
  EXPECT_EQ(timer.pending_timeouts(), 2u);
  EXPECT_NO_THROW(handles.push_back(timer.new_timeout([] {}, 1h)));
  EXPECT_EQ(timer.pending_timeouts(), 3u);
}

TEST_P(TimerCancelTest, ARunSlotIsFreeAgainOnceTheTaskHasReturned) {
  // The limit counts a due timeout until its run returns: its own task cannot schedule past it.
  ManualClock clock;
  HashedWheelTimer timer(limited_to(1), clock);
  bool refused_inside = false;
  timer.new_timeout(
      [&] {
        try {
          timer.new_timeout([] {}, 1h);
        } catch (const wheel::RejectedExecutionError&) {
          refused_inside = true;
        }
      },
      1ms);
  clock.advance(2ms);
  EXPECT_TRUE(refused_inside);
  EXPECT_EQ(timer.pending_timeouts(), 0u);
  EXPECT_NO_THROW(timer.new_timeout([] {}, 1h));
}

INSTANTIATE_TEST_SUITE_P(Layouts, TimerCancelTest, kLayouts, wheel::testing::layout_name);

}  // namespace
}  // namespace wheel::testing
