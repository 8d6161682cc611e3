// SPDX-License-Identifier: Apache-2.0
// TimerOptions validation (behaviour 7) and what the constructor logs (behaviour 13).
#include <chrono>
#include <cstdio>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <wheel/hashed_wheel_timer.h>

#include "support/timer_layouts.h"
#include "support/timer_test_support.h"

namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using wheel::HashedWheelTimer;
using wheel::TimerOptions;

// Returns the message of the std::invalid_argument that constructing with `options` throws.
std::string construction_error(TimerOptions options) {
  try {
    HashedWheelTimer timer(std::move(options));
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no exception)";
}

// Every test runs once per layout (TimerOptions::layout).
class TimerOptionsTest : public ::testing::TestWithParam<wheel::TimerLayout> {
 protected:
  TimerOptions layout_options() const {
    TimerOptions options;
    options.layout = GetParam();
    return options;
  }
};

TEST(TimerOptionsDefaultTest, DefaultLayoutIsHashed) {
  EXPECT_EQ(TimerOptions{}.layout, wheel::TimerLayout::kHashed);
}

TEST_P(TimerOptionsTest, DefaultsAreHundredMillisecondTickAnd512Buckets) {
  HashedWheelTimer timer(layout_options());
  EXPECT_EQ(timer.tick_duration(), 100ms);
  EXPECT_EQ(timer.ticks_per_wheel(), 512u);
  EXPECT_EQ(timer.pending_timeouts(), 0u);
}

TEST_P(TimerOptionsTest, TicksPerWheelIsRoundedUpToPowerOfTwo) {
  for (auto [asked, expected] : std::vector<std::pair<std::size_t, std::size_t>>{
           {2, 2}, {3, 4}, {500, 512}, {512, 512}, {513, 1024}, {(1u << 20) - 1, 1u << 20}}) {
    TimerOptions options = layout_options();
    options.ticks_per_wheel = asked;
    options.tick_duration = 1ms;
    HashedWheelTimer timer(options);
    EXPECT_EQ(timer.ticks_per_wheel(), expected) << "asked for " << asked;
  }
}

TEST_P(TimerOptionsTest, NonPositiveTickThrowsNamingTheOption) {
  for (auto tick : {0ns, -1ns, std::chrono::nanoseconds(-1s)}) {
    TimerOptions options = layout_options();
    options.tick_duration = tick;
    EXPECT_THAT(construction_error(options), HasSubstr("tick_duration"));
  }
}

TEST_P(TimerOptionsTest, ZeroOrHugeWheelThrowsNamingTheOption) {
  for (std::size_t buckets :
       {std::size_t{0}, (std::size_t{1} << 30) + 1, std::numeric_limits<std::size_t>::max()}) {
    TimerOptions options = layout_options();
    options.ticks_per_wheel = buckets;
    EXPECT_THAT(construction_error(options), HasSubstr("ticks_per_wheel")) << buckets;
  }
}

TEST_P(TimerOptionsTest, TickTimesWheelOverflowThrows) {
  TimerOptions options = layout_options();
  options.ticks_per_wheel = std::size_t{1} << 30;
  options.tick_duration = std::chrono::hours(24 * 365);
  EXPECT_THAT(construction_error(options), HasSubstr("overflows"));
}

TEST_P(TimerOptionsTest, TickBelowOneMillisecondIsRaisedWithWarning) {
  wheel::testing::LogCapture log;
  TimerOptions options = layout_options();
  options.tick_duration = 100us;
  HashedWheelTimer timer(options);
  EXPECT_EQ(timer.tick_duration(), 1ms);
  EXPECT_EQ(log.count("below 1ms", spdlog::level::warn), 1);
}

// The warning is once per process (as Netty's is once per JVM), so each layout checks it in a
// fresh child: run in one process, the first layout would use it up for the second.
TEST_P(TimerOptionsTest, WarnsOnceWhenMoreThan64TimersAreAlive) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        wheel::testing::LogCapture log;
        std::vector<std::unique_ptr<HashedWheelTimer>> timers;
        for (int i = 0; i < 64; ++i)
          timers.push_back(std::make_unique<HashedWheelTimer>(layout_options()));
        const int at_64 = log.count("HashedWheelTimer instances", spdlog::level::warn);
        for (int i = 0; i < 10; ++i)
          timers.push_back(std::make_unique<HashedWheelTimer>(layout_options()));
        const int at_74 = log.count("HashedWheelTimer instances", spdlog::level::warn);
        std::fprintf(stderr, "warnings at 64 timers: %d, at 74: %d\n", at_64, at_74);
        std::_Exit(at_64 == 0 && at_74 == 1 ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "warnings at 64 timers: 0, at 74: 1");
}

TEST_P(TimerOptionsTest, OneBucketIsAHashedWheelOnlyTheHierarchicalLayoutNeedsTwo) {
  TimerOptions options = layout_options();
  options.ticks_per_wheel = 1;
  options.tick_duration = 1ms;
  if (GetParam() == wheel::TimerLayout::kHashed) {
    HashedWheelTimer timer(options);
    EXPECT_EQ(timer.ticks_per_wheel(), 1u);
  } else {
    EXPECT_THAT(construction_error(options), HasSubstr("ticks_per_wheel"));
  }
}

TEST_P(TimerOptionsTest, UnknownLayoutThrowsNamingTheOption) {
  TimerOptions options = layout_options();
  options.layout = static_cast<wheel::TimerLayout>(7);
  EXPECT_THAT(construction_error(options), HasSubstr("layout"));
}

INSTANTIATE_TEST_SUITE_P(Layouts, TimerOptionsTest, wheel::testing::kLayouts,
                         wheel::testing::layout_name);

}  // namespace
