// SPDX-License-Identifier: Apache-2.0
#include "wheel/net/close_reason.h"

#include <iterator>

namespace wheel::net {

namespace {

// In CloseReason's order; a value outside it (a cast from a bad number) reads "?".
constexpr const char* kNames[] = {"reader idle", "writer idle",   "all idle",      "quit",
                                  "peer closed", "slow consumer", "line too long", "error",
                                  "shutdown",    "local"};
static_assert(std::size(kNames) == kCloseReasonCount &&
              static_cast<std::size_t>(CloseReason::kLocal) + 1 == kCloseReasonCount);

}  // namespace

const char* to_string(CloseReason reason) {
  const auto i = static_cast<std::size_t>(reason);
  return i < std::size(kNames) ? kNames[i] : "?";
}

}  // namespace wheel::net
