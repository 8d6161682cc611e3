#include "timer_wheel.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstdlib>

namespace wheel::detail {

TimerWheel::TimerWheel(std::size_t buckets)
    : store_(buckets),
      nonempty_(buckets),
      mask_(buckets - 1),
      bits_(static_cast<unsigned>(std::countr_zero(buckets))) {
  assert(std::has_single_bit(buckets));
}

void TimerWheel::insert(Timeout* node, std::uint64_t due, std::uint64_t tick) {
  const std::uint64_t slot_tick = std::max(due, tick);
  node->deadline_ = static_cast<std::int64_t>(slot_tick);
  // The bucket is visited at `tick` at the earliest (this tick's visit follows the insertion),
  // then once per turn; `rounds` visits pass before the one that expires it.
  const std::uint64_t rounds = (slot_tick - tick) >> bits_;
  const auto bucket = static_cast<std::uint32_t>(slot_tick & mask_);
  store_.push(bucket, node, rounds < kRoundLabels ? round_label(slot_tick) : kFar);
  nonempty_.set(bucket);
}

void TimerWheel::unlink(Timeout* node) {
  const std::uint32_t bucket = node->slot_.bucket;
  store_.remove(node);
  if (store_.size(bucket) == 0) nonempty_.clear(bucket);
}

Timeout* TimerWheel::collect_due(std::uint64_t tick) {
  constexpr std::uint32_t kChunk = BucketStore::kChunkEntries;
  const auto bucket = static_cast<std::uint32_t>(tick & mask_);
  std::uint32_t size = store_.size(bucket);
  std::uint64_t* const* chunks = store_.chunks(bucket);  // no chunk comes or goes in the walk
  const std::uint32_t chunk_count = (size + kChunk - 1) / kChunk;
  // The chunks lie apart in memory, beyond the hardware prefetcher's reach: fetch two ahead.
  const auto prefetch_chunk = [&](std::uint32_t c) {
    if (c >= chunk_count) return;
    const char* p = reinterpret_cast<const char*>(chunks[c]);
    for (std::size_t line = 0; line < kChunk * sizeof(std::uint64_t); line += 64) {
      __builtin_prefetch(p + line);
    }
  };
  prefetch_chunk(0);
  prefetch_chunk(1);
  const std::uint64_t now_label = round_label(tick);
  Timeout* ready_head = nullptr;
  Timeout* ready_tail = nullptr;
  for (std::uint32_t i = 0; i < size;) {
    if (i % kChunk == 0) prefetch_chunk(i / kChunk + 2);
    std::uint64_t& entry = chunks[i / kChunk][i % kChunk];
    const std::uint64_t label = BucketStore::counter_of(entry);
    if (label != now_label) {
      if (label != kFar) {  // rounds remain: nothing to write, nothing to touch
        ++i;
        continue;
      }
      // Too many rounds for a label: the node knows how many are left.
      Timeout* node = BucketStore::node_of(entry);
      const auto due = static_cast<std::uint64_t>(node->deadline_);
      const std::uint64_t left = (due - tick) >> bits_;
      if (left != 0) {
        if (left < kRoundLabels) entry = BucketStore::entry(node, round_label(due));
        ++i;
        continue;
      }
    }
    Timeout* node = BucketStore::node_of(entry);
    // A cancelled timeout stays until the cancellation queue reaches it; that single path
    // retires it (Netty retired it on both paths: netty#14959).
    if (!node->try_transition(Timeout::kExpired)) {
      ++i;
      continue;
    }
    store_.remove_at(bucket, i);  // the last entry, not yet visited, moves to i
    --size;
    node->queue_next_ = nullptr;
    (ready_tail == nullptr ? ready_head : ready_tail->queue_next_) = node;
    ready_tail = node;
  }
  store_.shrink(bucket);
  if (size == 0) nonempty_.clear(bucket);
  return ready_head;
}

std::optional<std::uint64_t> TimerWheel::ticks_to_next_event(std::uint64_t tick) const {
  if (store_.total() == 0) return std::nullopt;
  const std::size_t start = tick & mask_;
  auto bucket = nonempty_.first_set(start, mask_ + 1);
  if (!bucket) bucket = nonempty_.first_set(0, start);
  if (!bucket) return std::nullopt;  // unreachable while total() > 0
  return (*bucket - start) & mask_;
}

void TimerWheel::drain(const std::function<void(Timeout*)>& fn) {
  for (std::uint32_t b = 0; b < store_.buckets() && store_.total() > 0; ++b) {
    store_.take_each(b, fn);
    nonempty_.clear(b);
  }
}

}  // namespace wheel::detail
