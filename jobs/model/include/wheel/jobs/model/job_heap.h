// SPDX-License-Identifier: Apache-2.0
// JobHeap: a binary min-heap of Job pointers under an order (tube.h's ReadyOrder or
// DelayedOrder), as beanstalkd keeps each tube's ready and delayed jobs. Each job remembers its
// slot (Job::heap_pos), so removing any job is O(log n) without a search; a job is in at most
// one heap at a time (ready or delayed), so one slot field serves both. Compared with an
// ordered tree it costs 8 bytes per job in one array instead of a node allocation each, and
// pushing jobs in arbitrary order (a restart replaying a log) costs O(1) on average.
//
// Threads: as the queue that owns it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "wheel/jobs/model/job.h"

namespace wheel::jobs {

template <class Order>
class JobHeap {
 public:
  bool empty() const { return items_.empty(); }
  std::size_t size() const { return items_.size(); }
  // The least job under Order. REQUIRES: !empty().
  Job* top() const { return items_.front(); }
  // The job in slot `pos` of the heap's array (REQUIRES: pos < size()): every parent comes
  // before its children (slot p's are 2p+1 and 2p+2), so a reader can walk the first jobs in
  // order without taking them out (the web console's lists).
  Job* at(std::size_t pos) const { return items_[pos]; }

  // Adds `job` (REQUIRES: in no heap).
  void push(Job* job) {
    items_.push_back(job);
    sift_up(items_.size() - 1);
  }
  // Removes `job` (REQUIRES: in this heap).
  void erase(Job* job) {
    const std::size_t pos = job->heap_pos;  // < 2^32: a queue holds fewer jobs
    Job* last = items_.back();
    items_.pop_back();
    if (last == job) return;
    place(last, pos);
    if (pos > 0 && Order{}(last, items_[(pos - 1) / 2])) {
      sift_up(pos);
    } else {
      sift_down(pos);
    }
  }

 private:
  void place(Job* job, std::size_t pos) {
    items_[pos] = job;
    job->heap_pos = static_cast<std::uint32_t>(pos);
  }
  void sift_up(std::size_t pos) {
    Job* job = items_[pos];
    while (pos > 0) {
      const std::size_t parent = (pos - 1) / 2;
      if (!Order{}(job, items_[parent])) break;
      place(items_[parent], pos);
      pos = parent;
    }
    place(job, pos);
  }
  void sift_down(std::size_t pos) {
    Job* job = items_[pos];
    const std::size_t n = items_.size();
    for (;;) {
      std::size_t child = 2 * pos + 1;
      if (child >= n) break;
      if (child + 1 < n && Order{}(items_[child + 1], items_[child])) ++child;
      if (!Order{}(items_[child], job)) break;
      place(items_[child], pos);
      pos = child;
    }
    place(job, pos);
  }

  std::vector<Job*> items_;
};

}  // namespace wheel::jobs
