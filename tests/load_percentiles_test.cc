// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>
#include <wheel/load/percentiles.h>

#include <algorithm>
#include <random>
#include <vector>

using wheel::load::nearest_rank;
using wheel::load::summarize;

TEST(LoadPercentiles, NoSamplesGiveNoSummary) {
  EXPECT_FALSE(summarize({}).has_value());
}

TEST(LoadPercentiles, OneSampleIsEveryPercentile) {
  const auto s = summarize({42.5});
  ASSERT_TRUE(s);
  EXPECT_EQ(s->count, 1u);
  EXPECT_EQ(s->p50, 42.5);
  EXPECT_EQ(s->p99, 42.5);
  EXPECT_EQ(s->max, 42.5);
  EXPECT_EQ(s->min, 42.5);
}

TEST(LoadPercentiles, NearestRankOfOneToHundred) {
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  EXPECT_EQ(nearest_rank(v, 50), 50);
  EXPECT_EQ(nearest_rank(v, 90), 90);
  EXPECT_EQ(nearest_rank(v, 99), 99);
  EXPECT_EQ(nearest_rank(v, 100), 100);
  EXPECT_EQ(nearest_rank(v, 0.5), 1);
}

TEST(LoadPercentiles, NearestRankRoundsRankUpAndNeverInterpolates) {
  const std::vector<double> v{10, 20, 30, 40};
  EXPECT_EQ(nearest_rank(v, 50), 20);  // rank ceil(2.0) = 2
  EXPECT_EQ(nearest_rank(v, 51), 30);  // rank ceil(2.04) = 3
  EXPECT_EQ(nearest_rank(v, 99), 40);
  // 0.9 * 10 is 9.000000000000002 in doubles: still rank 9.
  std::vector<double> ten;
  for (int i = 1; i <= 10; ++i) ten.push_back(i);
  EXPECT_EQ(nearest_rank(ten, 90), 9);
}

TEST(LoadPercentiles, SummarizeSortsAnyOrderAndHandlesNegatives) {
  std::vector<double> v;
  for (int i = -500; i < 500; ++i) v.push_back(i);  // lateness can be negative (early)
  std::shuffle(v.begin(), v.end(), std::mt19937(7));
  const auto s = summarize(v);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->count, 1000u);
  EXPECT_EQ(s->min, -500);
  EXPECT_EQ(s->p50, -1);   // rank 500 of 1000
  EXPECT_EQ(s->p90, 399);  // rank 900
  EXPECT_EQ(s->p99, 489);  // rank 990
  EXPECT_EQ(s->max, 499);
}
