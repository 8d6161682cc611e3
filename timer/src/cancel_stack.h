// SPDX-License-Identifier: Apache-2.0
// Internal. The timer's cancellation queue: a lock-free multi-producer, single-consumer stack
// of cancelled timeouts (as IntrusiveStack), linked through the field that held each timeout's
// deadline until cancel() succeeded (Timeout::deadline_or_link_). A link is stored negative,
// so the worker, which may still look at the deadline, can tell the two apart.
#pragma once

#include <atomic>
#include <cstdint>

#include "wheel/timeout.h"

namespace wheel::detail {

class CancelStack {
 public:
  // Pushes `node`, whose cancel() has just succeeded. Sequentially consistent so that a
  // producer's later check of the worker's sleep flag cannot be ordered before it. Safe from
  // any thread.
  void push(Timeout* node) noexcept {
    Timeout* head = head_.load(std::memory_order_relaxed);
    do {
      // Release: a worker that reads the link instead of the deadline also sees the state
      // change to CANCELLED that came before it.
      node->deadline_or_link_.store(encode(head), std::memory_order_release);
    } while (!head_.compare_exchange_weak(head, node, std::memory_order_seq_cst,
                                          std::memory_order_relaxed));
  }

  // Safe from any thread; exact only for the consumer.
  bool empty() const noexcept { return head_.load(std::memory_order_seq_cst) == nullptr; }

  // The newest node, or null. Consumer only.
  Timeout* peek() const noexcept { return head_.load(std::memory_order_acquire); }

  // Takes every node pushed so far, newest first; walk them with next(). Consumer only.
  Timeout* take_all() noexcept { return head_.exchange(nullptr, std::memory_order_acquire); }

  // The node pushed before `node` (null for the oldest). Consumer only, on taken nodes.
  static Timeout* next(const Timeout* node) noexcept {
    return decode(node->deadline_or_link_.load(std::memory_order_relaxed));
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

  std::atomic<Timeout*> head_{nullptr};
};

}  // namespace wheel::detail
