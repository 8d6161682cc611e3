#include <gtest/gtest.h>
#include <wheel/load/duration.h>

#include <stdexcept>

using namespace std::chrono_literals;
using wheel::load::format_duration;
using wheel::load::parse_duration;

TEST(LoadDuration, ParsesEachUnit) {
  EXPECT_EQ(parse_duration("250ms"), 250ms);
  EXPECT_EQ(parse_duration("5s"), 5s);
  EXPECT_EQ(parse_duration("2m"), 2min);
  EXPECT_EQ(parse_duration("1h"), 1h);
  EXPECT_EQ(parse_duration("0"), 0ms);
  EXPECT_EQ(parse_duration("0s"), 0ms);
}

TEST(LoadDuration, RejectsMissingUnitNegativeFractionAndOverflow) {
  for (const char* bad :
       {"", "5", "s", "-1s", "1.5s", "5 s", "5sec", "10d", "99999999999999999h"}) {
    EXPECT_THROW(parse_duration(bad), std::invalid_argument) << bad;
  }
}

TEST(LoadDuration, FormatsWithLargestExactUnit) {
  EXPECT_EQ(format_duration(1500ms), "1500ms");
  EXPECT_EQ(format_duration(5s), "5s");
  EXPECT_EQ(format_duration(120s), "2m");
  EXPECT_EQ(format_duration(0ms), "0");
}
