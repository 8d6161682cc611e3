// SPDX-License-Identifier: Apache-2.0
// Internal. A first-in first-out list of timeouts linked through Timeout::queue_next_: the
// worker's backlog of submissions, and the due list a layout's collect_due() builds. O(1)
// append at the tail, nothing allocated. One thread at a time (its owner's).
#pragma once

#include "wheel/timeout.h"

namespace wheel::detail {

struct TimeoutList {
  Timeout* head = nullptr;
  Timeout* tail = nullptr;  // meaningful only while head is not null

  // Appends the chain first .. last, already linked, whose last link is null.
  void append(Timeout* first, Timeout* last) noexcept {
    (head == nullptr ? head : tail->queue_next_) = first;
    tail = last;
  }
  // Appends the single node `node`.
  void push_back(Timeout* node) noexcept {
    node->queue_next_ = nullptr;
    append(node, node);
  }
};

}  // namespace wheel::detail
