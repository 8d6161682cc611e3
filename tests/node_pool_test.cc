// SPDX-License-Identifier: Apache-2.0
// Tests of the timeout-node pool (timer/src/node_pool.cc): slots are distinct, reused, may be
// freed on another thread than the one that allocated them, and survive their thread's exit.
#include "wheel/detail/node_pool.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

// Watches ::operator new and delete, to tell pooled allocations from the others.
namespace {
std::atomic<int> large_news{0};
std::atomic<int> large_deletes{0};
std::atomic<int> node_sized_news{0};
std::atomic<void*> last_large_new{nullptr};
std::atomic<void*> last_large_delete{nullptr};
}  // namespace

void* operator new(std::size_t size) {
  void* p = std::malloc(size == 0 ? 1 : size);
  if (p == nullptr) throw std::bad_alloc();
  if (size > wheel::detail::kMaxPooledNodeSize && size <= 2 * wheel::detail::kMaxPooledNodeSize) {
    ++large_news;
    last_large_new = p;
  }
  if (size == 48) ++node_sized_news;
  return p;
}
namespace {
void free_watched(void* p) noexcept {
  if (p != nullptr && p == last_large_new.load()) {
    ++large_deletes;
    last_large_delete = p;
  }
  std::free(p);
}
}  // namespace
void operator delete(void* p) noexcept {
  free_watched(p);
}
void operator delete(void* p, std::size_t) noexcept {
  free_watched(p);
}

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
  constexpr std::size_t kLarge = kMaxPooledNodeSize + 8;
  const int news_before = large_news.load();
  const int deletes_before = large_deletes.load();
  void* p = allocate_node(kLarge);
  EXPECT_EQ(large_news.load() - news_before, 1) << "not taken from ::operator new";
  EXPECT_EQ(last_large_new.load(), p);
  std::memset(p, 1, kLarge);
  deallocate_node(p, kLarge);
  EXPECT_EQ(large_deletes.load() - deletes_before, 1) << "not given back to ::operator delete";
  EXPECT_EQ(last_large_delete.load(), p);
}

#if !defined(__SANITIZE_ADDRESS__)  // ASan builds bypass the pool for every size on purpose
TEST(NodePoolTest, PooledSizesDoNotCallOperatorNewPerNode) {
  const int before = node_sized_news.load();
  std::vector<void*> slots;
  for (int i = 0; i < 1000; ++i) slots.push_back(allocate_node(48));
  for (void* p : slots) deallocate_node(p, 48);
  EXPECT_EQ(node_sized_news.load() - before, 0);
}
#endif

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
