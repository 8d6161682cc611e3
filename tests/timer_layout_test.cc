// SPDX-License-Identifier: Apache-2.0
// The two wheel layouts (TimerOptions::layout) where they differ inside: rounds and cascades
// keep every timeout on time, cancellation reaches any level, the count stays exact, and the
// hierarchical worker sleeps from one bucket with work to the next.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <wheel/hashed_wheel_timer.h>
#include <wheel/manual_clock.h>

#include "support/timer_fixture.h"
#include "support/timer_test_support.h"
#include "support/worker_hold.h"

namespace {

using namespace std::chrono_literals;
using wheel::HashedWheelTimer;
using wheel::TimeoutHandle;
using wheel::TimerLayout;
using wheel::TimerOptions;
using wheel::testing::Clock;
using wheel::testing::Tracked;
using wheel::testing::wait_until;

class WheelLayoutTest : public wheel::testing::TimerTest {};

TEST_P(WheelLayoutTest, NeverEarlyWithDelaysOfOneToSeveralTurns) {
  // 16 buckets of 1 ms: a turn is 16 ms. The delays span 1 to 64 turns (hashed: up to 63
  // rounds; hierarchical: timeouts starting on levels 1 and 2, cascading down), including
  // delays a tick either side of whole turns, where an off-by-one in rounds or in a cascade
  // shows. Each is checked against steady_clock.
  constexpr std::int64_t kTurnMs = 16;
  HashedWheelTimer timer(options_with(1ms, kTurnMs));
  std::vector<std::chrono::microseconds> delays;
  for (std::int64_t turns = 1; turns <= 8; ++turns) {
    for (std::int64_t offset : {-1, 0, 1}) {
      delays.push_back(std::chrono::milliseconds(turns * kTurnMs + offset));
    }
  }
  std::minstd_rand random(12);
  while (delays.size() < 300) {
    delays.push_back(std::chrono::microseconds(kTurnMs * 1000 + random() % (63 * kTurnMs * 1000)));
  }
  std::vector<Clock::duration> lateness(delays.size());
  std::atomic<std::size_t> runs{0};
  for (std::size_t i = 0; i < delays.size(); ++i) {
    const auto due = Clock::now() + delays[i];
    timer.new_timeout(
        [&, i, due] {
          lateness[i] = Clock::now() - due;
          ++runs;
        },
        delays[i]);
  }
  ASSERT_TRUE(wait_until([&] { return runs == delays.size(); }));
  for (std::size_t i = 0; i < delays.size(); ++i) {
    EXPECT_GE(lateness[i], 0ns) << "delay " << delays[i].count() << " us fired early by "
                                << std::chrono::duration<double, std::milli>(-lateness[i]).count()
                                << " ms";
  }
  EXPECT_EQ(timer.pending_timeouts(), 0u);
}

TEST_P(WheelLayoutTest, CancelOfATimeoutOnAHigherLevelRetiresItAndSparesItsNeighbours) {
  // 8 buckets of 1 ms: 600 ms is beyond 8^3 ticks, so in the hierarchical layout these three
  // start on level 3, in one bucket; in the hashed one they share a bucket with 75 rounds.
  HashedWheelTimer timer(options_with(1ms, 8));
  std::atomic<int> live{0};
  std::atomic<int> fired{0};
  std::atomic<bool> cancelled_ran{false};
  const auto start = Clock::now();
  std::vector<Clock::time_point> fired_at(2);
  auto first =
      timer.new_timeout([&, t = Tracked(&live)] { fired_at[0] = Clock::now(), ++fired; }, 600ms);
  auto middle = timer.new_timeout([&, t = Tracked(&live)] { cancelled_ran = true; }, 600ms);
  auto last =
      timer.new_timeout([&, t = Tracked(&live)] { fired_at[1] = Clock::now(), ++fired; }, 600ms);
  ASSERT_EQ(live.load(), 3);
  {
    // The worker moves submissions into the wheel oldest first, so once it runs a task
    // submitted after the three, they are in the wheel; while that task holds it, none of them
    // can expire, so cancel() cannot lose to a long stall of this thread.
    wheel_test::WorkerHold hold(timer, 5ms);
    ASSERT_TRUE(hold.holding());
    ASSERT_TRUE(middle->cancel());
  }
  EXPECT_TRUE(wait_until([&] { return timer.pending_timeouts() == 2; }));
  EXPECT_TRUE(wait_until([&] { return live.load() == 2; })) << "the cancelled task lives on";
  ASSERT_TRUE(wait_until([&] { return fired.load() == 2; }));
  EXPECT_FALSE(cancelled_ran.load());
  for (const auto at : fired_at) EXPECT_GE(at - start, 600ms);
  EXPECT_TRUE(first->is_expired());
  EXPECT_TRUE(last->is_expired());
  EXPECT_TRUE(middle->is_cancelled());
  EXPECT_TRUE(wait_until([&] { return live.load() == 0; }));
}

TEST_P(WheelLayoutTest, PendingIsExactWithTimeoutsOnEveryLevel) {
  // 4 buckets of 1 ms: delays from 1 ms to 2 s put timeouts on levels 0 to 5 (hashed: up to
  // 500 rounds). Half are cancelled at once; every timeout ends exactly once, the count never
  // disagrees with the tasks that ran and the cancellations that succeeded.
  HashedWheelTimer timer(options_with(1ms, 4));
  constexpr int kCount = 2'000;
  std::atomic<int> fired{0};
  std::vector<TimeoutHandle> handles;
  std::minstd_rand random(5);
  for (int i = 0; i < kCount; ++i) {
    handles.push_back(timer.new_timeout([&] { ++fired; },
                                        std::chrono::microseconds(1000 + random() % 2'000'000)));
  }
  int cancelled = 0;
  for (int i = 0; i < kCount; i += 2) cancelled += handles[i]->cancel() ? 1 : 0;
  // The count drops once the worker processed the cancellations; tasks may run meanwhile.
  ASSERT_TRUE(wait_until([&] {
    const int ran = fired.load();
    const auto pending = static_cast<int>(timer.pending_timeouts());
    return pending == kCount - cancelled - ran && ran == fired.load();
  }));
  EXPECT_LE(static_cast<int>(timer.pending_timeouts()), kCount - cancelled);
  ASSERT_TRUE(wait_until([&] { return fired.load() == kCount - cancelled; }));
  EXPECT_TRUE(wait_until([&] { return timer.pending_timeouts() == 0; }));
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(fired.load(), kCount - cancelled) << "a cancelled timeout ran";
  int expired = 0;
  for (auto& handle : handles) expired += handle->is_expired() ? 1 : 0;
  EXPECT_EQ(expired, kCount - cancelled);
}

TEST_P(WheelLayoutTest, RoundsBeyondTheEntryCounterNeitherFireEarlyNorGetLost) {
  // One bucket of 1 ms: a 10-minute delay is 600,000 rounds, more than an entry's counter
  // holds (2^19 - 1); the hashed wheel then counts from the node's due tick. The hierarchical
  // layout rejects one bucket, so it runs with two. On a ManualClock: the clock goes to a tick
  // before the 10 minutes end without the test waiting for any of them.
  const std::size_t buckets = GetParam() == TimerLayout::kHashed ? 1 : 2;
  wheel::ManualClock clock;
  HashedWheelTimer timer(options_with(1ms, buckets), clock);
  bool far_ran = false;
  bool near_ran = false;
  auto far = timer.new_timeout([&] { far_ran = true; }, std::chrono::minutes(10));
  timer.new_timeout([&] { near_ran = true; }, 50ms);
  clock.advance(51ms);  // the near one's tick has ended
  EXPECT_TRUE(near_ran);
  clock.advance(std::chrono::minutes(10) - 52ms);  // a tick before the far one is due
  EXPECT_FALSE(far_ran);
  EXPECT_EQ(timer.pending_timeouts(), 1u);
  EXPECT_TRUE(far->cancel());
  clock.advance(1ms);  // a tick: the worker takes the cancellation in
  EXPECT_EQ(timer.pending_timeouts(), 0u);
  // Not lost either: one more of 10 minutes runs once they have passed, not a tick before.
  bool second_ran = false;
  timer.new_timeout([&] { second_ran = true; }, std::chrono::minutes(10));
  clock.advance(std::chrono::minutes(10) - 1ms);
  EXPECT_FALSE(second_ran);
  clock.advance(2ms);
  EXPECT_TRUE(second_ran);
}

TEST_P(WheelLayoutTest, AHugeDelayLeavesTheWorkerAsleep) {
  // A delay of nanoseconds::max() is due ~292 years on: the next event (a hierarchical cascade)
  // is that far away too, and computing the worker's wake-up time for it must not overflow
  // into a deadline in the past (a worker spinning without sleep).
  const std::string name = "huge-delay";
  HashedWheelTimer timer(options_with(1ms, 512, name));
  std::atomic<bool> ran{false};
  auto handle = timer.new_timeout([&] { ran = true; }, std::chrono::nanoseconds::max());
  std::optional<int> tid;
  ASSERT_TRUE(wait_until([&] { return (tid = wheel::testing::find_thread(name)).has_value(); }));
  std::this_thread::sleep_for(20ms);
  const auto before = wheel::testing::voluntary_switches(*tid);
  std::this_thread::sleep_for(300ms);
  const auto switches = wheel::testing::voluntary_switches(*tid) - before;
  EXPECT_FALSE(ran.load());
  EXPECT_EQ(timer.pending_timeouts(), 1u);
  EXPECT_LT(switches, 10) << "the worker woke for nothing";
  EXPECT_TRUE(handle->cancel());
}

TEST_P(WheelLayoutTest, AFarTimeoutWakesTheWorkerOnlyNearItsTick) {
  // 16 buckets of 1 ms: a 700 ms timeout waits 43 turns. The hashed worker knows its bucket
  // has nothing due before the last of them and sleeps through the 43 visits; the
  // hierarchical one (the timeout starts on level 2, 256..4095 ticks) wakes for the level-2
  // cascade, the level-1 cascade and the due tick. Neither wakes for the ~700 ticks between.
  const std::string name = "hier-cascade";
  HashedWheelTimer timer(options_with(1ms, 16, name));
  timer.start();
  std::optional<int> tid;
  ASSERT_TRUE(wait_until([&] { return (tid = wheel::testing::find_thread(name)).has_value(); }));
  std::this_thread::sleep_for(20ms);
  std::atomic<Clock::rep> fired_at{0};
  const auto before = wheel::testing::voluntary_switches(*tid);
  const auto start = Clock::now();
  timer.new_timeout([&] { fired_at = Clock::now().time_since_epoch().count(); }, 700ms);
  ASSERT_TRUE(wait_until([&] { return fired_at.load() != 0; }));
  const auto switches = wheel::testing::voluntary_switches(*tid) - before;
  EXPECT_GE(Clock::time_point(Clock::duration(fired_at.load())) - start, 700ms);
  EXPECT_LT(switches, 15) << "the worker woke for empty ticks";
}

TEST_P(WheelLayoutTest, ManyTimeoutsManyTurnsAwayLeaveTheWorkerAsleep) {
  // 2,000 timeouts of 30 s to 2 min at tick 1 ms fill most of a 512-bucket wheel, 58 to 234
  // turns away. Nothing is due (hashed) or cascades (hierarchical: they wait on level 1 or 2)
  // for 30 s, so the worker stays asleep instead of visiting a bucket every tick.
  const std::string name = "hier-sleepy";
  HashedWheelTimer timer(options_with(1ms, 512, name));
  std::minstd_rand random(3);
  std::vector<TimeoutHandle> handles;
  for (int i = 0; i < 2'000; ++i) {
    handles.push_back(
        timer.new_timeout([] {}, std::chrono::milliseconds(30'000 + random() % 90'000)));
  }
  std::optional<int> tid;
  ASSERT_TRUE(wait_until([&] { return (tid = wheel::testing::find_thread(name)).has_value(); }));
  std::this_thread::sleep_for(50ms);  // the transfer into the wheel is done
  const auto before = wheel::testing::voluntary_switches(*tid);
  std::this_thread::sleep_for(500ms);  // 500 ticks
  EXPECT_LT(wheel::testing::voluntary_switches(*tid) - before, 10);
  EXPECT_EQ(timer.pending_timeouts(), 2'000u);
}

INSTANTIATE_TEST_SUITE_P(Layouts, WheelLayoutTest, wheel::testing::kLayouts,
                         wheel::testing::layout_name);

}  // namespace
