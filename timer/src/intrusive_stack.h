// SPDX-License-Identifier: Apache-2.0
// Internal. A lock-free multi-producer, single-consumer stack of intrusive nodes (a Treiber
// stack): producers push with one compare-and-swap; the consumer takes everything at once and
// reverses it, so it sees each producer's pushes in order. No allocation, no ABA (nodes are
// never popped one by one). `Link` says where a node keeps its link: get(node) and
// set(node, next); MemberLink for a plain pointer member.
#pragma once

#include <atomic>

namespace wheel::detail {

template <class Node, Node* Node::*Next>
struct MemberLink {
  static Node* get(const Node* node) noexcept { return node->*Next; }
  static void set(Node* node, Node* next) noexcept { node->*Next = next; }
};

template <class Node, class Link>
class IntrusiveStack {
 public:
  // Pushes `node`. Sequentially consistent so that a producer's later check of the worker's
  // sleep flag cannot be ordered before it. Safe from any thread.
  void push(Node* node) noexcept {
    Node* head = head_.load(std::memory_order_relaxed);
    do {
      Link::set(node, head);
    } while (!head_.compare_exchange_weak(head, node, std::memory_order_seq_cst,
                                          std::memory_order_relaxed));
  }

  // Safe from any thread; exact only for the consumer.
  bool empty() const noexcept { return head_.load(std::memory_order_seq_cst) == nullptr; }

  // The newest node, or null. Consumer only (for anyone else it may be gone at once).
  Node* peek() const noexcept { return head_.load(std::memory_order_acquire); }

  // Takes every node pushed so far, newest first, linked through Link. Consumer only.
  Node* take_all() noexcept { return head_.exchange(nullptr, std::memory_order_acquire); }

  // Takes every node pushed so far, oldest first, linked through Link; *tail gets the newest.
  // Consumer only.
  Node* take_all_oldest_first(Node** tail) noexcept {
    Node* node = head_.exchange(nullptr, std::memory_order_acquire);
    *tail = node;
    Node* reversed = nullptr;
    while (node != nullptr) {
      Node* next = Link::get(node);
      Link::set(node, reversed);
      reversed = node;
      node = next;
    }
    return reversed;
  }

 private:
  std::atomic<Node*> head_{nullptr};
};

}  // namespace wheel::detail
