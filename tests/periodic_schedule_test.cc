// SPDX-License-Identifier: Apache-2.0
// HashedWheelTimer::new_periodic(): when the runs happen. Fixed rate on absolute deadlines
// (first + k x period, never drifting), one run per period for a period of a tick or more,
// missed periods coalescing into one run, a run slower than its period, at most one run per
// tick, with and without an executor. On a wheel::ManualClock, once per layout; the fixed-rate
// arithmetic is also checked alone.
#include <chrono>
#include <cstdint>
#include <limits>
#include <vector>

#include <gtest/gtest.h>
#include <wheel/hashed_wheel_timer.h>
#include <wheel/manual_clock.h>

#include "periodic_deadline.h"
#include "support/timer_fixture.h"

// Inside wheel::testing, the timer's names and the fixture's helpers need no using-declarations.
namespace wheel::testing {
namespace {

using namespace std::chrono_literals;
using Ns = std::chrono::nanoseconds;

class PeriodicScheduleTest : public TimerTest {};

// ---------------------------------------------------------------- the arithmetic alone

using wheel::detail::next_periodic_deadline;

TEST(PeriodicDeadlineTest, NoDriftOverAHundredThousandPeriods) {
  // Each run returns a little late (up to 90% of a period): the next deadline stays on the
  // grid first + k * period, exactly, for 10^5 periods.
  constexpr std::int64_t kFirst = 1'234'567;
  constexpr std::int64_t kPeriod = 1'000'003;  // ns, deliberately not a multiple of the tick
  constexpr std::int64_t kTick = 1'000'000;
  std::int64_t deadline = kFirst;
  for (std::int64_t k = 1; k <= 100'000; ++k) {
    const std::int64_t returned_at = deadline + (k * 7919) % (kPeriod * 9 / 10);
    deadline = next_periodic_deadline(deadline, kPeriod, kTick, returned_at);
    ASSERT_EQ(deadline, kFirst + k * kPeriod) << "period " << k;
  }
}

TEST(PeriodicDeadlineTest, AGridPointIsMissedOnlyOnceItsTickHasEnded) {
  // (deadline, period, tick, now) -> next. A run due at `deadline` returns at `now`; the next
  // grid point is skipped only if its tick [floor(p / tick) * tick, + tick) has ended by `now`.
  struct Row {
    std::int64_t deadline, period, tick, now, next;
  };
  const Row rows[] = {
      // Period == tick: a run returns during the tick after its deadline, the next point's tick
      // is still ahead (the halved rate of a `deadline + period <= now` test).
      {100, 10, 10, 110, 110},
      {100, 10, 10, 119, 110},
      {100, 10, 10, 120, 120},  // 110's tick ended at 120: missed, coalesced
      {100, 10, 10, 137, 130},  // 110 and 120 coalesce
      // Period 3 ticks.
      {100, 30, 10, 110, 130},
      {100, 30, 10, 139, 130},
      {100, 30, 10, 140, 160},  // 130's tick ended at 140
      // Period below the tick: the first point in now's tick or later, one run per tick.
      {100, 4, 10, 110, 112},
      {112, 4, 10, 120, 120},
      // Off the tick grid: 120 is in tick [120, 130).
      {95, 25, 10, 100, 120},
      {95, 25, 10, 129, 120},
      {95, 25, 10, 130, 145},
      // Tick of 1 ns: missed only once strictly past.
      {100, 10, 1, 137, 140},
      {100, 10, 1, 140, 140},
      {100, 10, 1, 141, 150},
      {100, 10, 1, 109, 110},
      // A negative first deadline (negative initial delay) stays on its grid too.
      {-25, 10, 10, 3, 5},
      {-25, 10, 1, 3, 5},
      {-25, 10, 10, -11, -15},  // floor: now -11 is in tick [-20, -10)
      {-25, 10, 10, -1, -5},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(next_periodic_deadline(r.deadline, r.period, r.tick, r.now), r.next)
        << "deadline " << r.deadline << ", period " << r.period << ", tick " << r.tick << ", now "
        << r.now;
  }
}

TEST(PeriodicDeadlineTest, SaturatesInsteadOfOverflowing) {
  constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
  constexpr auto kMin = std::numeric_limits<std::int64_t>::min();
  EXPECT_EQ(next_periodic_deadline(kMax - 5, 10, 1, 0), kMax);
  EXPECT_EQ(next_periodic_deadline(0, kMax, 1, kMax - 1), kMax);
  EXPECT_EQ(next_periodic_deadline(kMin, 3, 1, kMax - 1), kMax);
  // Within range: the first point of kMin's grid in the last whole millisecond tick.
  EXPECT_EQ(next_periodic_deadline(kMin, 3, 1'000'000, kMax), 9'223'372'036'854'000'001);
  EXPECT_EQ(next_periodic_deadline(kMax - 20, 7, kMax, kMax - 1), kMax - 13);
  EXPECT_EQ(next_periodic_deadline(kMin, kMax, kMax, kMax), kMax);
}

// ---------------------------------------------------------------- the table

TEST_P(PeriodicScheduleTest, PeriodPFromStartTRunsAtK1K2K3) {
  // Tick 1 ms, 8 buckets, the clock moved 1 ms at a time. A periodic timeout created when the
  // clock reads `start` with `initial` and `period` is due at start + initial + k x period and
  // runs when the clock first reads the end of that deadline's tick; a deadline already past
  // runs on the next tick; at most one run per tick (a period shorter than the tick coalesces).
  struct Row {
    long long start_ms;
    Ns initial, period;
    long long k1, k2, k3;
  };
  const Row rows[] = {
      {0, 10ms, 10ms, 11, 21, 31},      // the plain case
      {3, 0ms, 2ms, 4, 6, 8},           // a run every other tick
      {2, 5ms, 2500us, 8, 10, 13},      // deadlines 7, 9.5, 12: off the tick grid, no drift
      {0, 0ms, 400us, 1, 2, 3},         // period below the tick: once per tick
      {0, 0ms, 1ms, 1, 2, 3},           // period == tick: every tick
      {6, 0ms, 999us, 7, 8, 9},         // just below the tick: every tick too
      {2, 5ms, 1001us, 8, 9, 10},       // deadlines 7, 8.001, 9.002 ms
      {1, 30ms, 20ms, 32, 52, 72},      // beyond the 8-bucket wheel: rounds, cascades
      {4, -3ms, 5ms, 5, 7, 12},         // first deadline (1 ms) past: runs now, then on its grid
      {0, 100ms, 64ms, 101, 165, 229},  // a multiple of the wheel's turn
      {5, 7ms, 61ms, 13, 74, 135},      // wraps the bucket index differently each run
  };
  for (const Row& r : rows) {
    ManualClock clock;
    HashedWheelTimer timer(options_with(1ms, 8), clock);
    timer.start();
    clock.advance_to(std::chrono::milliseconds(r.start_ms));
    std::vector<long long> runs;
    TimeoutHandle handle =
        timer.new_periodic([&] { runs.push_back(ms_of(clock.now())); }, r.initial, r.period);
    for (int step = 0; step < 400 && runs.size() < 3; ++step) clock.advance(1ms);
    EXPECT_EQ(runs, (std::vector<long long>{r.k1, r.k2, r.k3}))
        << "start " << r.start_ms << " ms, initial " << r.initial.count() << " ns, period "
        << r.period.count() << " ns";
    EXPECT_TRUE(handle->cancel());
  }
}

TEST_P(PeriodicScheduleTest, APeriodOfKTicksRunsEveryKthTickForAHundredTicks) {
  // Fixed rate for any period >= the tick: one run per period, never half that. A run returns
  // during the tick after its deadline, so the clock then reads up to a tick past that deadline;
  // the next grid point is not missed for that (its own tick is still ahead).
  struct Row {
    Ns tick;
    int k;  // period = k ticks
  };
  const Row rows[] = {{1ms, 1}, {1ms, 2}, {1ms, 3}, {10ms, 1}, {1ms, 7}};
  for (const Row& r : rows) {
    ManualClock clock;
    HashedWheelTimer timer(options_with(r.tick, 8), clock);
    timer.start();
    std::vector<Ns> runs;
    const Ns period = r.tick * r.k;
    TimeoutHandle handle =
        timer.new_periodic([&] { runs.push_back(clock.now()); }, 5 * r.tick, period);
    for (int step = 0; step < 100 * r.k + 5; ++step) clock.advance(r.tick);
    ASSERT_EQ(runs.size(), 100u) << "tick " << r.tick.count() << " ns, period " << r.k << " ticks";
    for (std::size_t i = 0; i < runs.size(); ++i) {
      // Due at 5 ticks + i periods, run at the end of that tick.
      ASSERT_EQ(runs[i], 5 * r.tick + period * static_cast<std::int64_t>(i) + r.tick)
          << "run " << i << ", tick " << r.tick.count() << " ns, period " << r.k << " ticks";
    }
    EXPECT_TRUE(handle->cancel());
  }
}

TEST_P(PeriodicScheduleTest, StaysOnItsFixedRateGrid) {
  // Period 2.5 ms, not a multiple of the tick: run i is due at 20 ms + i x 2.5 ms, exactly; a
  // re-arm from the run's own time (now + period) drifts by up to a tick per run.
  ManualClock clock;
  HashedWheelTimer timer(options_with(), clock);
  constexpr Ns kInitial = 20ms;
  constexpr Ns kPeriod = 2500us;
  std::vector<Ns> runs;
  TimeoutHandle handle =
      timer.new_periodic([&] { runs.push_back(clock.now()); }, kInitial, kPeriod);
  for (int step = 0; step < 300 && runs.size() < 100; ++step) clock.advance(1ms);
  ASSERT_EQ(runs.size(), 100u);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const Ns due = kInitial + kPeriod * static_cast<std::int64_t>(i);
    ASSERT_EQ(runs[i], due / 1ms * 1ms + 1ms) << "run " << i;
  }
  EXPECT_TRUE(handle->cancel());
}

TEST_P(PeriodicScheduleTest, MissedPeriodsCoalesceIntoOneRun) {
  // The clock jumps 20 periods at once (a worker blocked by another task, a suspended process):
  // one late run, then the next grid point strictly after it, not a burst of 20.
  ManualClock clock;
  HashedWheelTimer timer(options_with(), clock);
  std::vector<Ns> runs;
  TimeoutHandle handle = timer.new_periodic([&] { runs.push_back(clock.now()); }, 10ms, 10ms);
  for (int step = 0; step < 11; ++step) clock.advance(1ms);
  ASSERT_EQ(runs, std::vector<Ns>({11ms}));
  clock.advance(200ms);  // now 211 ms: the deadlines 20, 30 ... 210 ms are all due
  EXPECT_EQ(runs, std::vector<Ns>({11ms, 211ms})) << "a catch-up burst";
  for (int step = 0; step < 30; ++step) clock.advance(1ms);  // to 241 ms
  EXPECT_EQ(runs, std::vector<Ns>({11ms, 211ms, 221ms, 231ms, 241ms}))
      << "back on the grid 10 + k x 10 ms";
  EXPECT_TRUE(handle->cancel());
}

// ---------------------------------------------------------------- a run slower than its period

TEST_P(PeriodicScheduleTest, ARunSlowerThanItsPeriodKeepsTheFixedRateGrid) {
  // Fixed rate, not fixed delay (hashed_wheel_timer.h): period 20 ms from 20 ms. The executor
  // holds the first run's job and runs it `late` ms after its hand-over at 21 ms (a slow run).
  // No second job is handed out meanwhile (runs never overlap); the next run is at the first
  // grid point (40, 60, 80 ms ...) whose tick has not ended when the slow run returned, plus
  // the tick: not return + period (fixed delay), and not straight away for each missed period
  // (a burst). Returned at 40 ms, the point 40 ms still runs on time, at 41 ms; returned at
  // 41 ms, its tick has ended and it coalesces.
  struct Row {
    long long late_ms, next_run_ms;
  };
  const Row rows[] = {{0, 41},  {15, 41}, {18, 41}, {19, 41}, {20, 61},
                      {25, 61}, {39, 61}, {40, 81}, {45, 81}, {80, 121}};
  for (const Row& r : rows) {
    ManualClock clock;
    std::vector<TimerJob> held;
    HashedWheelTimer timer(options_holding_jobs(held), clock);
    std::vector<long long> runs;
    TimeoutHandle handle =
        timer.new_periodic([&] { runs.push_back(ms_of(clock.now())); }, 20ms, 20ms);
    clock.advance_to(21ms);
    ASSERT_EQ(held.size(), 1u) << "handed to the executor at 21 ms";
    for (long long t = 0; t < r.late_ms; ++t) clock.advance(1ms);
    ASSERT_EQ(held.size(), 1u) << "a second run was handed out while the first had not returned";
    TimerJob slow = std::move(held[0]);
    held.clear();
    slow();  // returns at 21 + late ms
    EXPECT_EQ(timer.pending_timeouts(), 1u);
    for (int step = 0; step < 200 && held.empty(); ++step) clock.advance(1ms);
    ASSERT_EQ(held.size(), 1u);
    held[0]();
    EXPECT_EQ(runs, (std::vector<long long>{21 + r.late_ms, r.next_run_ms}))
        << "the first run returned " << r.late_ms << " ms late";
    EXPECT_TRUE(handle->cancel());
  }
}

TEST_P(PeriodicScheduleTest, WithAnExecutorStaysOnItsFixedRateGrid) {
  // Jobs run at the executor up to 3 ms after their hand-over (a busy pool): the grid does not
  // move, run i is still due at 20 ms + i x 7 ms.
  ManualClock clock;
  std::vector<TimerJob> held;
  HashedWheelTimer timer(options_holding_jobs(held), clock);
  std::vector<Ns> handed;
  constexpr Ns kPeriod = 7ms;
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
    const Ns due = 20ms + kPeriod * static_cast<std::int64_t>(i);
    ASSERT_EQ(handed[i], due / 1ms * 1ms + 1ms) << "run " << i;
  }
  EXPECT_TRUE(handle->cancel());
}

INSTANTIATE_TEST_SUITE_P(Layouts, PeriodicScheduleTest, kLayouts, wheel::testing::layout_name);

}  // namespace
}  // namespace wheel::testing
