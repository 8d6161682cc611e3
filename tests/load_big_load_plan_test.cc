// SPDX-License-Identifier: Apache-2.0
// The big case's plan (load/big_load_plan.h): the formulas of its file comment, and each limit
// that refuses a run.
#include "wheel/load/big_load_plan.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace wheel::load {
namespace {

using std::chrono::seconds;

MachineLimits roomy() {
  return {.open_files = 20'000, .ports = 28'232, .file_max = 10'000'000, .files_in_use = 5'000};
}

TEST(BigLoadPlan, HundredThousandAtFiveThousandASecond) {
  const BigLoadPlan p = plan_big_load({}, roomy());
  EXPECT_EQ(p.ramp, seconds(20));
  EXPECT_EQ(p.reader_idle, seconds(40));  // ramp + max(20, 10)
  EXPECT_EQ(p.duration, seconds(70));     // 40 + 20 + 10
  EXPECT_EQ(p.ping_interval, seconds(13));
  EXPECT_EQ(p.per_worker, 19'900U);
  EXPECT_EQ(p.workers_needed, 6U);  // ceil(100000 / 19900)
  EXPECT_EQ(p.workers, 7U);         // + 6/20 + 1
  EXPECT_EQ(p.addresses, 20U);      // 5,000 per address
  EXPECT_EQ(p.sources, "127.0.0.1-127.0.0.20");
  EXPECT_EQ(p.files_needed, 200'000U + 100 * (7 + 6 + 2));
  EXPECT_EQ(p.window_from, seconds(25));
  EXPECT_EQ(p.window_to, seconds(35));
}

TEST(BigLoadPlan, LongRampsGetHalfTheRampAsMarginAndOverridesWin) {
  BigLoadRequest r;
  r.connections = 1'000'000;
  const BigLoadPlan p = plan_big_load(r, roomy());
  EXPECT_EQ(p.ramp, seconds(200));
  EXPECT_EQ(p.reader_idle, seconds(300));
  r.reader_idle = seconds(50);
  r.duration = seconds(60);
  r.ping_interval = seconds(7);
  r.workers = 60;
  const BigLoadPlan q = plan_big_load(r, roomy());
  EXPECT_EQ(q.reader_idle, seconds(50));
  EXPECT_EQ(q.duration, seconds(60));
  EXPECT_EQ(q.ping_interval, seconds(7));
  EXPECT_EQ(q.workers, 60U);
  EXPECT_GE(q.window_from, q.window_to) << "no idle window: closes start before the ramp ends";
}

TEST(BigLoadPlan, SmallPortRangeSpreadsOverMoreAddresses) {
  MachineLimits m = roomy();
  m.ports = 10'000;  // 2,000 per address
  BigLoadRequest r;
  r.connections = 1000;
  EXPECT_EQ(plan_big_load(r, m).addresses, 2U) << "at least two";
  r.connections = 100'000;
  EXPECT_EQ(plan_big_load(r, m).addresses, 50U);
}

TEST(BigLoadPlan, EachLimitRefusesARunItCannotHold) {
  BigLoadRequest r;
  r.connections = 999;
  EXPECT_THROW(plan_big_load(r, roomy()), std::invalid_argument);
  r.connections = 2'000'001;
  EXPECT_THROW(plan_big_load(r, roomy()), std::invalid_argument);
  r.connections = 100'000;
  r.workers = 3;  // 6 needed
  EXPECT_THROW(plan_big_load(r, roomy()), std::invalid_argument);
  r.workers.reset();
  MachineLimits m = roomy();
  m.file_max = 150'000;  // 200,000 more needed
  EXPECT_THROW(plan_big_load(r, m), std::invalid_argument);
  m = roomy();
  m.ports = 1000;  // 200 per address: 500 addresses
  EXPECT_THROW(plan_big_load(r, m), std::invalid_argument);
  m = roomy();
  m.open_files = 100;
  EXPECT_THROW(plan_big_load(r, m), std::invalid_argument);
  try {
    r.workers = 300;
    plan_big_load(r, roomy());
    FAIL() << "300 workers were accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "300 workers cannot hold 100000 connections (need 6, at most 256)");
  }
}

}  // namespace
}  // namespace wheel::load
