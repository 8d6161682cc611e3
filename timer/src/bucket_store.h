// SPDX-License-Identifier: Apache-2.0
// Internal. The buckets of a wheel, each an array of 8-byte entries, one per timeout. An entry
// packs the node's address with a small counter (the hashed layout's due-round label), so a
// walk over a bucket reads one contiguous array and touches a node only when it is due.
// Removing an entry is O(1): the bucket's last entry moves into its place (the node records
// its bucket and index in Timeout::slot_). Worker thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "wheel/timeout.h"

namespace wheel::detail {

class BucketStore {
 public:
  // Counter bits of an entry; the node address takes the other 45 (8-byte aligned user-space
  // addresses below 2^48, as on x86-64 and arm64 Linux; checked on insertion).
  static constexpr int kCounterBits = 19;
  static constexpr std::uint64_t kCounterMax = (std::uint64_t{1} << kCounterBits) - 1;
  // A bucket's entries live in chunks of this many (512 bytes): no reallocation, no
  // fragmentation, and at most about one chunk of slack per bucket.
  static constexpr std::uint32_t kChunkEntries = 64;

  explicit BucketStore(std::size_t buckets);
  ~BucketStore();
  BucketStore(const BucketStore&) = delete;
  BucketStore& operator=(const BucketStore&) = delete;

  std::size_t buckets() const { return buckets_.size(); }
  // Appends `count` empty buckets.
  void add_buckets(std::size_t count) { buckets_.resize(buckets_.size() + count); }
  // Entries in the whole store.
  std::size_t total() const { return total_; }

  std::uint32_t size(std::uint32_t bucket) const { return buckets_[bucket].size; }
  // Entry `index` (< size) of `bucket`.
  std::uint64_t& at(std::uint32_t bucket, std::uint32_t index) {
    return buckets_[bucket].chunks[index / kChunkEntries][index % kChunkEntries];
  }

  // The chunk table of `bucket`: entry i is chunks[i / kChunkEntries][i % kChunkEntries]. Valid
  // until the next push() or shrink() of that bucket.
  std::uint64_t* const* chunks(std::uint32_t bucket) const { return buckets_[bucket].chunks; }

  // Cache hints for remove(node), issued for a group of nodes before removing them: first the
  // entry and the bucket's last entry, then the node whose entry will move.
  void prefetch_entries(const Timeout* node) const {
    const Bucket& b = buckets_[node->slot_.bucket];
    const std::uint32_t i = node->slot_.index;
    __builtin_prefetch(&b.chunks[i / kChunkEntries][i % kChunkEntries], 1);
    __builtin_prefetch(&b.chunks[(b.size - 1) / kChunkEntries][(b.size - 1) % kChunkEntries]);
  }
  void prefetch_moved_node(const Timeout* node) const {
    const Bucket& b = buckets_[node->slot_.bucket];
    __builtin_prefetch(
        node_of(b.chunks[(b.size - 1) / kChunkEntries][(b.size - 1) % kChunkEntries]), 1);
  }

  static std::uint64_t entry(Timeout* node, std::uint64_t counter) {
    return (reinterpret_cast<std::uintptr_t>(node) << (kCounterBits - 3)) | counter;
  }
  static Timeout* node_of(std::uint64_t entry) {
    return reinterpret_cast<Timeout*>((entry >> (kCounterBits - 3)) & ~std::uintptr_t{7});
  }
  static std::uint64_t counter_of(std::uint64_t entry) { return entry & kCounterMax; }

  // Appends `node` with `counter` (<= kCounterMax) to `bucket`. O(1); aborts the process if
  // memory runs out (the worker cannot report it to anyone).
  void push(std::uint32_t bucket, Timeout* node, std::uint64_t counter);
  // Removes the entry at `index` of `bucket`: the last entry takes its place (and its node
  // learns its new index). O(1). Keeps the storage (call shrink() after a walk).
  void remove_at(std::uint32_t bucket, std::uint32_t index);
  // Removes `node`'s entry. O(1).
  void remove(Timeout* node) {
    const std::uint32_t bucket = node->slot_.bucket;
    remove_at(bucket, node->slot_.index);
    shrink(bucket);
  }
  // Frees chunks the bucket no longer needs (keeping up to half a chunk of slack against
  // churn at a chunk boundary), and all of its storage once empty.
  void shrink(std::uint32_t bucket);

  // Empties `bucket`, calling fn(Timeout*) for each entry it held; fn may push to other
  // buckets.
  template <class Fn>
  void take_each(std::uint32_t bucket, Fn&& fn) {
    Bucket b = buckets_[bucket];
    buckets_[bucket] = Bucket{};
    total_ -= b.size;
    for (std::uint32_t i = 0; i < b.size; ++i) {
      fn(node_of(b.chunks[i / kChunkEntries][i % kChunkEntries]));
    }
    release(b);
  }

 private:
  struct Bucket {
    std::uint64_t** chunks = nullptr;  // table of chunk pointers
    std::uint32_t size = 0;            // entries
    std::uint16_t chunk_count = 0;     // chunks allocated (none beyond the table)
    std::uint16_t table_capacity = 0;  // in log2: the table holds 2^table_capacity pointers
  };
  void release(Bucket& b);
  void add_chunk(Bucket& b);
  // Chunks come from blocks of kChunksPerBlock, kept on a free list when unused: no malloc
  // header per chunk (3% of a chunk), and no malloc call on most pushes.
  std::uint64_t* new_chunk();
  void free_chunk(std::uint64_t* chunk) {
    *reinterpret_cast<std::uint64_t**>(chunk) = free_chunks_;
    free_chunks_ = chunk;
  }
  static constexpr std::size_t kChunksPerBlock = 64;

  std::vector<Bucket> buckets_;
  std::size_t total_ = 0;
  std::uint64_t* free_chunks_ = nullptr;  // linked through each chunk's first word
  std::vector<void*> blocks_;
};

}  // namespace wheel::detail
