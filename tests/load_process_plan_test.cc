// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>
#include <wheel/load/process_plan.h>

#include <stdexcept>

using wheel::load::kReservedFds;
using wheel::load::plan_processes;

TEST(LoadProcessPlan, AutoUsesOneProcessWhenTheLimitHolds) {
  const auto p = plan_processes(10'000, std::nullopt, 20'000);
  EXPECT_EQ(p.processes, 1u);
  EXPECT_EQ(p.max_per_process, 10'000u);
}

TEST(LoadProcessPlan, AutoSplitsPastTheOpenFileLimit) {
  // 20,000 - 64 = 19,936 per process: 100,000 need 6.
  const auto p = plan_processes(100'000, std::nullopt, 20'000);
  EXPECT_EQ(p.processes, 6u);
  EXPECT_EQ(p.max_per_process, 16'667u);
  EXPECT_EQ(plan_processes(20'000 - kReservedFds, std::nullopt, 20'000).processes, 1u);
  EXPECT_EQ(plan_processes(20'000 - kReservedFds + 1, std::nullopt, 20'000).processes, 2u);
}

TEST(LoadProcessPlan, ExplicitNumberThatHoldsTheRunIsKept) {
  EXPECT_EQ(plan_processes(100, 4, 20'000).processes, 4u);
  EXPECT_EQ(plan_processes(100, 4, 20'000).max_per_process, 25u);
}

TEST(LoadProcessPlan, ExplicitNumberTooSmallIsRefusedWithTheNumberNeeded) {
  try {
    plan_processes(50'000, 2, 20'000);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("--processes 2 cannot hold 50000"), std::string::npos) << m;
    EXPECT_NE(m.find("at least 3"), std::string::npos) << m;
  }
}

TEST(LoadProcessPlan, RefusesZeroTooManyAndATinyLimit) {
  EXPECT_THROW(plan_processes(10, 0, 20'000), std::invalid_argument);
  EXPECT_THROW(plan_processes(10, 65, 20'000), std::invalid_argument);
  EXPECT_THROW(plan_processes(10'000'000, std::nullopt, 20'000), std::invalid_argument);
  EXPECT_THROW(plan_processes(10, std::nullopt, 10), std::invalid_argument);
}
