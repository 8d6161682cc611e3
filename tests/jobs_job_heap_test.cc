// SPDX-License-Identifier: Apache-2.0
// JobHeap (wheel/jobs/job_heap.h): the tubes' ready and delayed orders. Random pushes and
// removals of arbitrary members, checked after every step against an ordered set: the top is
// always the least job, every job's slot names it, and the heap drains in order.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <set>
#include <vector>

#include "wheel/jobs/model/tube.h"

namespace wheel::jobs {
namespace {

template <class Order>
void check_against_set(std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::unique_ptr<Job>> jobs;
  JobHeap<Order> heap;
  std::set<Job*, Order> model;
  std::uint64_t next_id = 1;
  for (int step = 0; step < 5000; ++step) {
    if (model.empty() || rng() % 3 != 0) {
      auto job = std::make_unique<Job>();
      job->id = next_id++;
      job->priority = rng() % 8;  // many ties: the id must break them
      job->deadline = Millis(rng() % 50);
      heap.push(job.get());
      model.insert(job.get());
      jobs.push_back(std::move(job));
    } else {
      auto it = model.begin();
      std::advance(it, rng() % model.size());
      heap.erase(*it);
      model.erase(it);
    }
    ASSERT_EQ(heap.size(), model.size());
    if (!model.empty()) {
      ASSERT_EQ(heap.top(), *model.begin()) << "step " << step;
    }
  }
  for (Job* job : model) ASSERT_LT(job->heap_pos, heap.size());
  while (!model.empty()) {
    ASSERT_EQ(heap.top(), *model.begin());
    heap.erase(heap.top());
    model.erase(model.begin());
  }
  EXPECT_TRUE(heap.empty());
}

TEST(JobHeapTest, ReadyOrderMatchesAnOrderedSetUnderRandomPushesAndRemovals) {
  for (std::uint32_t seed = 1; seed <= 3; ++seed) check_against_set<ReadyOrder>(seed);
}

TEST(JobHeapTest, DelayedOrderMatchesAnOrderedSetUnderRandomPushesAndRemovals) {
  for (std::uint32_t seed = 1; seed <= 3; ++seed) check_against_set<DelayedOrder>(seed);
}

TEST(JobHeapTest, RemovingTheLastSlotAndTheOnlyJobLeaveItConsistent) {
  Job a, b;
  a.id = 1;
  b.id = 2;
  JobHeap<ReadyOrder> heap;
  heap.push(&a);
  heap.erase(&a);
  EXPECT_TRUE(heap.empty());
  heap.push(&a);
  heap.push(&b);
  heap.erase(&b);  // the last slot
  EXPECT_EQ(heap.top(), &a);
  EXPECT_EQ(a.heap_pos, 0u);
}

}  // namespace
}  // namespace wheel::jobs
