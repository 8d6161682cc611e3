// SPDX-License-Identifier: Apache-2.0
#include "bucket_store.h"

#include <cassert>
#include <cstdlib>

#include <spdlog/spdlog.h>

#include "wheel/logger.h"

namespace wheel::detail {

static_assert(sizeof(void*) == 8, "entries pack 64-bit node addresses");

namespace {

[[noreturn]] void out_of_memory() {
  wheel::logger()->critical("wheel: out of memory growing a wheel bucket");
  std::abort();
}

}  // namespace

BucketStore::BucketStore(std::size_t buckets) : buckets_(buckets) {}

BucketStore::~BucketStore() {
  for (Bucket& b : buckets_) std::free(b.chunks);
  for (void* block : blocks_) std::free(block);
}

void BucketStore::release(Bucket& b) {
  for (std::uint32_t c = 0; c < b.chunk_count; ++c) free_chunk(b.chunks[c]);
  std::free(b.chunks);
  b = Bucket{};
}

std::uint64_t* BucketStore::new_chunk() {
  if (free_chunks_ == nullptr) {
    constexpr std::size_t kChunkBytes = kChunkEntries * sizeof(std::uint64_t);
    blocks_.reserve(blocks_.size() + 1);  // before malloc: nothing to undo if it throws
    void* block = std::malloc(kChunksPerBlock * kChunkBytes);
    if (block == nullptr) out_of_memory();
    blocks_.push_back(block);
    for (std::size_t i = kChunksPerBlock; i-- > 0;) {
      free_chunk(reinterpret_cast<std::uint64_t*>(static_cast<char*>(block) + i * kChunkBytes));
    }
  }
  std::uint64_t* chunk = free_chunks_;
  free_chunks_ = *reinterpret_cast<std::uint64_t**>(chunk);
  return chunk;
}

void BucketStore::add_chunk(Bucket& b) {
  // 2^32 entries need 2^26 chunks: the table's capacity exponent stays below 32.
  if (b.chunks == nullptr || b.chunk_count == (std::uint32_t{1} << b.table_capacity)) {
    const unsigned capacity = b.chunks == nullptr ? 0 : b.table_capacity + 1u;
    void* table = std::realloc(b.chunks, (std::size_t{1} << capacity) * sizeof(std::uint64_t*));
    if (table == nullptr) out_of_memory();
    b.chunks = static_cast<std::uint64_t**>(table);
    b.table_capacity = static_cast<std::uint16_t>(capacity);
  }
  b.chunks[b.chunk_count++] = new_chunk();
}

void BucketStore::push(std::uint32_t bucket, Timeout* node, std::uint64_t counter) {
  assert(counter <= kCounterMax);
  if ((reinterpret_cast<std::uintptr_t>(node) >> 48) != 0) {
    wheel::logger()->critical("wheel: node address {} beyond 48 bits", static_cast<void*>(node));
    std::abort();
  }
  Bucket& b = buckets_[bucket];
  if (b.size == std::uint32_t{0xFFFFFFFF}) {
    wheel::logger()->critical("wheel: more than 2^32 timeouts in one bucket");
    std::abort();
  }
  if (b.size == std::uint32_t{b.chunk_count} * kChunkEntries) add_chunk(b);
  node->slot_ = WheelSlot{bucket, b.size};
  b.chunks[b.size / kChunkEntries][b.size % kChunkEntries] = entry(node, counter);
  ++b.size;
  ++total_;
}

void BucketStore::remove_at(std::uint32_t bucket, std::uint32_t index) {
  Bucket& b = buckets_[bucket];
  assert(index < b.size);
  const std::uint32_t last = --b.size;
  if (index != last) {
    std::uint64_t& slot = b.chunks[index / kChunkEntries][index % kChunkEntries];
    slot = b.chunks[last / kChunkEntries][last % kChunkEntries];
    node_of(slot)->slot_.index = index;
  }
  --total_;
}

void BucketStore::shrink(std::uint32_t bucket) {
  Bucket& b = buckets_[bucket];
  if (b.size == 0) {
    release(b);
    return;
  }
  while (b.chunk_count > 1 &&
         b.size + kChunkEntries / 2 <= std::uint32_t{b.chunk_count - 1u} * kChunkEntries) {
    free_chunk(b.chunks[--b.chunk_count]);
  }
}

}  // namespace wheel::detail
