// SPDX-License-Identifier: Apache-2.0
// net::CloseReason's names (wheel/net/close_reason.h): one per reason, and "?" for a value
// outside the enum.
#include <gtest/gtest.h>

#include <iterator>
#include <string>
#include <utility>

#include "wheel/net/close_reason.h"

namespace wheel::net {
namespace {

TEST(CloseReasonName, EveryReasonAndAnOutOfRangeValue) {
  const std::pair<CloseReason, std::string> names[] = {
      {CloseReason::kReaderIdle, "reader idle"},    {CloseReason::kWriterIdle, "writer idle"},
      {CloseReason::kAllIdle, "all idle"},          {CloseReason::kQuit, "quit"},
      {CloseReason::kPeerClosed, "peer closed"},    {CloseReason::kSlowConsumer, "slow consumer"},
      {CloseReason::kLineTooLong, "line too long"}, {CloseReason::kError, "error"},
      {CloseReason::kShutdown, "shutdown"},         {CloseReason::kLocal, "local"}};
  static_assert(std::size(names) == kCloseReasonCount);
  for (const auto& [reason, name] : names) EXPECT_EQ(to_string(reason), name);
  EXPECT_STREQ(to_string(static_cast<CloseReason>(kCloseReasonCount)), "?");
}

}  // namespace
}  // namespace wheel::net
