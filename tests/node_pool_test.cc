// Tests of the timeout-node pool (timer/src/node_pool.cc): slots are distinct, reused, may be
// freed on another thread than the one that allocated them, and survive their thread's exit.
#include "wheel/detail/node_pool.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace wheel::detail {
namespace {

TEST(NodePoolTest, SlotsAreDistinctAlignedAndWritable) {
  std::vector<void*> slots;
  for (int i = 0; i < 2000; ++i) {
    void* p = allocate_node(48);
    ASSERT_EQ(reinterpret_cast<std::uintptr_t>(p) % 8, 0u);
    std::memset(p, i & 0xff, 48);
    slots.push_back(p);
  }
  std::set<void*> unique(slots.begin(), slots.end());
  EXPECT_EQ(unique.size(), slots.size());
  for (std::size_t i = 0; i < slots.size(); ++i) {
    EXPECT_EQ(static_cast<unsigned char*>(slots[i])[47], i & 0xff);  // no slot overlaps another
  }
  for (void* p : slots) deallocate_node(p, 48);
}

TEST(NodePoolTest, LargeSizesBypassThePool) {
  void* p = allocate_node(kMaxPooledNodeSize + 8);
  std::memset(p, 1, kMaxPooledNodeSize + 8);
  deallocate_node(p, kMaxPooledNodeSize + 8);
}

TEST(NodePoolTest, SlotsFreedOnOtherThreadsAndAfterTheirThreadEnded) {
  constexpr int kPerThread = 5000;
  std::vector<void*> from_a(kPerThread);
  std::thread a([&] {
    for (auto& p : from_a) p = allocate_node(56);
  });
  a.join();  // a's cache is gone; its slots are still valid
  std::thread b([&] {
    for (void* p : from_a) deallocate_node(p, 56);
  });
  b.join();  // b's cache handed them to the depot
  std::vector<void*> again(kPerThread);
  for (auto& p : again) p = allocate_node(56);
  std::set<void*> unique(again.begin(), again.end());
  EXPECT_EQ(unique.size(), again.size());
  for (void* p : again) deallocate_node(p, 56);
}

TEST(NodePoolTest, ManyThreadsAllocateAndFreeConcurrently) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t] {
      std::vector<void*> mine;
      for (int round = 0; round < 20; ++round) {
        for (int i = 0; i < 1000; ++i) {
          void* p = allocate_node(48 + 8 * (t % 2));
          *static_cast<int*>(p) = t;
          mine.push_back(p);
        }
        for (void* p : mine) {
          ASSERT_EQ(*static_cast<int*>(p), t);
          deallocate_node(p, 48 + 8 * (t % 2));
        }
        mine.clear();
      }
    });
  }
  for (auto& th : threads) th.join();
}

}  // namespace
}  // namespace wheel::detail
