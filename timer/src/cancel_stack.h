// SPDX-License-Identifier: Apache-2.0
// Internal. Where the cancellation queue (an IntrusiveStack of cancelled timeouts) keeps its
// links: in the field that held each timeout's deadline until cancel() succeeded
// (Timeout::deadline_or_link_). A link is stored negative, so the worker, which may still look
// at the deadline, can tell the two apart.
#pragma once

#include <atomic>
#include <cstdint>

#include "intrusive_stack.h"
#include "wheel/timeout.h"

namespace wheel::detail {

struct CancelLink {
  // The node pushed before `node` (null for the oldest). Consumer only, on taken nodes.
  static Timeout* get(const Timeout* node) noexcept {
    return decode(node->deadline_or_link_.load(std::memory_order_relaxed));
  }
  // Release: a worker that reads the link instead of the deadline also sees the state change
  // to CANCELLED that came before it.
  static void set(Timeout* node, Timeout* next) noexcept {
    node->deadline_or_link_.store(encode(next), std::memory_order_release);
  }

 private:
  static constexpr std::uint64_t kLinkTag = std::uint64_t{1} << 63;

  static std::int64_t encode(Timeout* node) noexcept {
    return static_cast<std::int64_t>(kLinkTag | reinterpret_cast<std::uintptr_t>(node));
  }
  static Timeout* decode(std::int64_t link) noexcept {
    return reinterpret_cast<Timeout*>(
        static_cast<std::uintptr_t>(static_cast<std::uint64_t>(link) & ~kLinkTag));
  }
};

using CancelStack = IntrusiveStack<Timeout, CancelLink>;

}  // namespace wheel::detail
