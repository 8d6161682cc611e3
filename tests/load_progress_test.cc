// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>
#include <wheel/load/progress.h>

using wheel::load::decode_progress;
using wheel::load::encode_progress;
using wheel::load::format_progress;
using wheel::load::Progress;

TEST(LoadProgress, EncodedProgressDecodesToTheSameFigures) {
  const Progress p{2.5, 100, 90, 40, 50, 7, 3, 1234, 2};
  Progress back;
  ASSERT_TRUE(decode_progress(encode_progress(p), back));
  EXPECT_EQ(encode_progress(back), encode_progress(p));
  EXPECT_EQ(back.churn_cycles, 1234u);
  EXPECT_EQ(back.mix_failures, 2u);
  EXPECT_FALSE(decode_progress("1.0 2 3", back));
}

TEST(LoadProgress, SumsChildrenAndShowsChurnOnlyWhenThere) {
  Progress a{1, 10, 10, 5, 5, 0, 0, 0, 0};
  EXPECT_EQ(format_progress(a).find("churn"), std::string::npos);
  a += Progress{2, 10, 8, 4, 4, 1, 2, 30, 1};
  EXPECT_EQ(a.elapsed_s, 2);
  EXPECT_EQ(a.connected, 18u);
  EXPECT_EQ(a.churn_cycles, 30u);
  EXPECT_NE(format_progress(a).find("churn cycles 30, mix failures 1"), std::string::npos);
}
