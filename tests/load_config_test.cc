// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>
#include <wheel/load/load_config.h>

#include <map>

using wheel::load::LoadConfig;
using wheel::load::Role;
using wheel::load::role_of;

namespace {

std::map<Role, std::size_t> count_roles(const LoadConfig& config, std::size_t first,
                                        std::size_t last) {
  std::map<Role, std::size_t> n;
  for (std::size_t i = first; i < last; ++i) ++n[role_of(i, config)];
  return n;
}

LoadConfig mix() {
  LoadConfig c;
  c.active_ratio = 0.6;
  c.delay_share = 0.25;
  c.slow_share = 0.15;
  c.garbage_share = 0.15;
  return c;
}

}  // namespace

TEST(LoadConfig, RolesFollowTheShares) {
  auto n = count_roles(mix(), 0, 10'000);
  EXPECT_EQ(n[Role::kIdle], 4000u);
  // 6,000 active: 1,500 DELAY, 900 slow, 900 garbage, 2,700 PING, each within 1%.
  EXPECT_NEAR(static_cast<double>(n[Role::kDelay]), 1500, 15);
  EXPECT_NEAR(static_cast<double>(n[Role::kSlowReader]), 900, 9);
  EXPECT_NEAR(static_cast<double>(n[Role::kGarbage]), 900, 9);
  EXPECT_NEAR(static_cast<double>(n[Role::kPing]), 2700, 27);
}

TEST(LoadConfig, EverySliceGetsItsShareOfEachRole) {
  // A process of a fan-out opens a contiguous slice: it must see the mix too.
  auto n = count_roles(mix(), 3'000, 4'000);
  EXPECT_EQ(n[Role::kIdle], 400u);
  EXPECT_NEAR(static_cast<double>(n[Role::kDelay]), 150, 5);
  EXPECT_NEAR(static_cast<double>(n[Role::kSlowReader]), 90, 5);
  EXPECT_NEAR(static_cast<double>(n[Role::kGarbage]), 90, 5);
}

TEST(LoadConfig, WithoutSharesEveryActiveConnectionPings) {
  LoadConfig c;
  c.active_ratio = 0.5;
  auto n = count_roles(c, 0, 1000);
  EXPECT_EQ(n[Role::kPing], 500u);
  EXPECT_EQ(n[Role::kIdle], 500u);
  EXPECT_EQ(n.size(), 2u);
}

TEST(LoadConfig, FullShareGivesThatRoleToEveryActiveConnection) {
  LoadConfig c;
  c.active_ratio = 1;
  c.delay_share = 1;
  EXPECT_EQ(count_roles(c, 0, 500)[Role::kDelay], 500u);
}
