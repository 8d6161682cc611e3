// SPDX-License-Identifier: Apache-2.0
// Every timer test suite runs against both wheel layouts:
//   class FooTest : public ::testing::TestWithParam<wheel::TimerLayout> {};
//   INSTANTIATE_TEST_SUITE_P(Layouts, FooTest, wheel::testing::kLayouts,
//                            wheel::testing::layout_name);
#pragma once

#include <chrono>
#include <cstddef>
#include <ostream>
#include <string>

#include <gtest/gtest.h>
#include <wheel/timer_options.h>

namespace wheel {
// Names the parameter in test output (found by argument-dependent lookup).
inline void PrintTo(TimerLayout layout, std::ostream* os) {
  *os << (layout == TimerLayout::kHashed ? "kHashed" : "kHierarchical");
}
}  // namespace wheel

namespace wheel::testing {

inline const auto kLayouts = ::testing::Values(TimerLayout::kHashed, TimerLayout::kHierarchical);

inline std::string layout_name(const ::testing::TestParamInfo<TimerLayout>& info) {
  return info.param == TimerLayout::kHashed ? "Hashed" : "Hierarchical";
}

// `buckets` buckets per wheel, a 1 ms tick, `layout`: small, so that a table test reaches
// rounds, cascades and wrap-around within a few hundred ticks. Options: TimerOptions or
// LoopWheelOptions.
template <class Options>
Options small_wheel(std::size_t buckets, TimerLayout layout) {
  Options options;
  options.tick_duration = std::chrono::milliseconds(1);
  options.ticks_per_wheel = buckets;
  options.layout = layout;
  return options;
}

}  // namespace wheel::testing
