// SPDX-License-Identifier: Apache-2.0
// JobQueue::tubes_by_jobs: the bounded choice of tubes for per-tube metric series (apart from
// job_queue.cc so that queue_metrics.cc, which job_queue.h includes, needs no JobQueue).
#include <algorithm>

#include "wheel/jobs/model/job_queue.h"

namespace wheel::jobs {

std::vector<const Tube*> JobQueue::tubes_by_jobs(std::size_t limit) const {
  // More jobs first, then by name: a strict order, so the choice is the same on every scrape
  // while the counts stay.
  const auto before = [](const Tube* a, const Tube* b) {
    if (a->job_count() != b->job_count()) return a->job_count() > b->job_count();
    return a->name() < b->name();
  };
  std::vector<const Tube*> top;
  if (limit == 0) return top;
  top.reserve(std::min(limit, tubes_.size()) + 1);
  // A heap of the best `limit` so far, whose top is the worst of them: O(tubes * log(limit)).
  for (const auto& [name, tube] : tubes_) {
    if (top.size() < limit) {
      top.push_back(tube.get());
      std::push_heap(top.begin(), top.end(), before);
    } else if (before(tube.get(), top.front())) {
      std::pop_heap(top.begin(), top.end(), before);
      top.back() = tube.get();
      std::push_heap(top.begin(), top.end(), before);
    }
  }
  std::sort_heap(top.begin(), top.end(), before);
  return top;
}

}  // namespace wheel::jobs
