// SPDX-License-Identifier: Apache-2.0
// net::CloseReason's names (wheel/net/close_reason.h): one per reason, in the order the enum
// declares them, and "?" for a value outside it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "wheel/net/close_reason.h"

namespace wheel::net {
namespace {

TEST(CloseReasonName, EveryReasonInOrder) {
  const std::vector<std::string> names = {"reader idle", "writer idle",   "all idle",      "quit",
                                          "peer closed", "slow consumer", "line too long", "error",
                                          "shutdown",    "local"};
  ASSERT_EQ(names.size(), kCloseReasonCount);
  for (std::size_t i = 0; i < kCloseReasonCount; ++i) {
    EXPECT_EQ(to_string(static_cast<CloseReason>(i)), names[i]) << i;
  }
  EXPECT_STREQ(to_string(CloseReason::kSlowConsumer), "slow consumer");
  EXPECT_STREQ(to_string(static_cast<CloseReason>(kCloseReasonCount)), "?");
}

}  // namespace
}  // namespace wheel::net
