// SPDX-License-Identifier: Apache-2.0
#include "wheel/detail/node_pool.h"

#include <array>
#include <cstdint>
#include <mutex>
#include <new>
#include <vector>

namespace wheel::detail {

namespace {

// A "magazine" allocator (Bonwick's): each thread keeps up to two lists of kBatch free slots per
// size class and trades whole lists with a global depot, so the depot's lock is taken once per
// kBatch allocations or frees, and no list is ever walked.
constexpr std::size_t kClasses = kMaxPooledNodeSize / 8;
constexpr std::size_t kBatch = 256;
constexpr std::size_t kSlabBytes = std::size_t{1} << 20;

struct FreeSlot {
  FreeSlot* next;
};

struct Magazine {
  FreeSlot* head = nullptr;
  std::size_t count = 0;
};

class Depot {
 public:
  // A full magazine of class c, or an empty one when the depot has none.
  Magazine take(std::size_t c) {
    std::lock_guard lock(mutex_);
    auto& stock = full_[c];
    if (stock.empty()) return {};
    Magazine m = stock.back();
    stock.pop_back();
    return m;
  }
  void give(std::size_t c, Magazine m) {
    if (m.count == 0) return;
    std::lock_guard lock(mutex_);
    full_[c].push_back(m);
  }
  // Fresh memory for `bytes` bytes: carved from the current slab (a new slab when it is used up).
  char* carve(std::size_t bytes) {
    std::lock_guard lock(mutex_);
    if (slab_left_ < bytes) {
      slab_ = static_cast<char*>(::operator new(kSlabBytes));
      slab_left_ = kSlabBytes;
      slabs_.push_back(slab_);  // kept reachable: the pool lives as long as the process
    }
    char* p = slab_;
    slab_ += bytes;
    slab_left_ -= bytes;
    return p;
  }

 private:
  std::mutex mutex_;
  std::array<std::vector<Magazine>, kClasses> full_;
  std::vector<char*> slabs_;
  char* slab_ = nullptr;
  std::size_t slab_left_ = 0;
};

// Never destroyed: threads that end after main() returns still hand their slots back to it.
Depot& depot() {
  static Depot* d = new Depot;
  return *d;
}

class ThreadCache {
 public:
  ~ThreadCache() {
    for (std::size_t c = 0; c < kClasses; ++c) {
      depot().give(c, loaded_[c]);
      depot().give(c, spare_[c]);
      // The rest of the fresh run becomes a magazine too.
      Magazine rest;
      for (; fresh_left_[c] > 0; --fresh_left_[c], fresh_[c] += (c + 1) * 8) {
        auto* slot = reinterpret_cast<FreeSlot*>(fresh_[c]);
        slot->next = rest.head;
        rest.head = slot;
        ++rest.count;
      }
      depot().give(c, rest);
    }
  }

  void* allocate(std::size_t c) {
    Magazine& m = loaded_[c];
    if (m.count == 0 && !reload(c)) return carve(c);
    FreeSlot* slot = m.head;
    m.head = slot->next;
    --m.count;
    return slot;
  }

  void deallocate(void* p, std::size_t c) {
    Magazine& m = loaded_[c];
    if (m.count == kBatch) {
      depot().give(c, spare_[c]);
      spare_[c] = m;
      m = {};
    }
    auto* slot = static_cast<FreeSlot*>(p);
    slot->next = m.head;
    m.head = slot;
    ++m.count;
  }

 private:
  bool reload(std::size_t c) {
    if (spare_[c].count > 0) {
      loaded_[c] = spare_[c];
      spare_[c] = {};
      return true;
    }
    loaded_[c] = depot().take(c);
    return loaded_[c].count > 0;
  }

  // Bump-allocates from this thread's run of fresh slots, refilled kBatch slots at a time.
  void* carve(std::size_t c) {
    const std::size_t size = (c + 1) * 8;
    if (fresh_left_[c] == 0) {
      fresh_[c] = depot().carve(size * kBatch);
      fresh_left_[c] = kBatch;
    }
    void* p = fresh_[c];
    fresh_[c] += size;
    --fresh_left_[c];
    return p;
  }

  std::array<Magazine, kClasses> loaded_{};
  std::array<Magazine, kClasses> spare_{};
  std::array<char*, kClasses> fresh_{};
  std::array<std::size_t, kClasses> fresh_left_{};
};

// The calling thread's cache; null before its first use and after the thread's exit handlers
// destroyed it (a node freed then, e.g. by a static timer's destructor, goes to the depot).
thread_local ThreadCache* tls_cache = nullptr;
thread_local bool tls_cache_gone = false;

struct CacheOwner {
  ThreadCache cache;
  ~CacheOwner() {
    tls_cache = nullptr;
    tls_cache_gone = true;
  }
};

ThreadCache* thread_cache() {
  if (tls_cache != nullptr) return tls_cache;
  if (tls_cache_gone) return nullptr;
  static thread_local CacheOwner owner;
  tls_cache = &owner.cache;
  return tls_cache;
}

constexpr std::size_t size_class(std::size_t size) {
  return (size + 7) / 8 - 1;
}

}  // namespace

// AddressSanitizer builds use plain new/delete so that it still sees every node's lifetime.
#if defined(__SANITIZE_ADDRESS__)
void* allocate_node(std::size_t size) {
  return ::operator new(size);
}
void deallocate_node(void* p, std::size_t /*size*/) noexcept {
  ::operator delete(p);
}
#else
void* allocate_node(std::size_t size) {
  if (size > kMaxPooledNodeSize || size == 0) return ::operator new(size);
  const std::size_t c = size_class(size);
  if (ThreadCache* cache = thread_cache()) return cache->allocate(c);
  Magazine m = depot().take(c);  // this thread's cache is gone: one slot at a time
  if (m.count == 0) return depot().carve((c + 1) * 8);
  void* slot = m.head;
  m.head = m.head->next;
  --m.count;
  depot().give(c, m);
  return slot;
}
void deallocate_node(void* p, std::size_t size) noexcept {
  if (size > kMaxPooledNodeSize || size == 0) return ::operator delete(p);
  const std::size_t c = size_class(size);
  if (ThreadCache* cache = thread_cache()) return cache->deallocate(p, c);
  auto* slot = static_cast<FreeSlot*>(p);
  slot->next = nullptr;
  depot().give(c, Magazine{slot, 1});
}
#endif

}  // namespace wheel::detail
