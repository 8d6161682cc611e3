// SPDX-License-Identifier: Apache-2.0
#include "hashed_layout.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstdlib>

#include "timeout_list.h"

namespace wheel::detail {

HashedLayout::HashedLayout(std::size_t buckets, bool unshared)
    : store_(buckets),
      nonempty_(buckets),
      first_due_round_(buckets, kNoRound),
      mask_(buckets - 1),
      bits_(static_cast<unsigned>(std::countr_zero(buckets))),
      unshared_(unshared) {
  assert(std::has_single_bit(buckets));
}

void HashedLayout::insert(Timeout* node, std::uint64_t due, std::uint64_t tick) {
  const std::uint64_t slot_tick = std::max(due, tick);
  if (unshared_) {
    node->store_deadline_unshared(static_cast<std::int64_t>(slot_tick));
  } else {
    node->set_deadline(static_cast<std::int64_t>(slot_tick));  // false: cancelled, retired soon
  }
  // The bucket is visited at `tick` at the earliest (this tick's visit follows the insertion),
  // then once per turn; `rounds` visits pass before the one that expires it.
  const std::uint64_t rounds = (slot_tick - tick) >> bits_;
  const auto bucket = static_cast<std::uint32_t>(slot_tick & mask_);
  store_.push(bucket, node, rounds < kRoundLabels ? round_label(slot_tick) : kFar);
  nonempty_.set(bucket);
  first_due_round_[bucket] = std::min(first_due_round_[bucket], slot_tick >> bits_);
}

void HashedLayout::unlink(Timeout* node) {
  const std::uint32_t bucket = node->slot_.bucket;
  store_.remove(node);
  if (store_.size(bucket) == 0) nonempty_.clear(bucket);
}

Timeout* HashedLayout::collect_due(std::uint64_t tick) {
  constexpr std::uint32_t kChunk = BucketStore::kChunkEntries;
  const auto bucket = static_cast<std::uint32_t>(tick & mask_);
  const std::uint64_t round = tick >> bits_;
  // Nothing in the bucket is due before its first due round: skip the walk. (Cancellations do
  // not raise the bound; it only has to be low enough.)
  if (first_due_round_[bucket] > round) return nullptr;
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
  // The walk recomputes the bound: rounds ahead of this one, least over what stays.
  std::uint64_t least_ahead = kRoundLabels;
  TimeoutList ready;
  for (std::uint32_t i = 0; i < size;) {
    if (i % kChunk == 0) prefetch_chunk(i / kChunk + 2);
    std::uint64_t& entry = chunks[i / kChunk][i % kChunk];
    const std::uint64_t label = BucketStore::counter_of(entry);
    if (label != now_label) {
      if (label != kFar) {  // rounds remain: nothing to write, nothing to touch
        least_ahead = std::min(least_ahead, (label + kRoundLabels - now_label) % kRoundLabels);
        ++i;
        continue;
      }
      // Too many rounds for a label: the node knows how many are left.
      Timeout* node = BucketStore::node_of(entry);
      const std::int64_t deadline = node->deadline();
      if (deadline < 0) {  // cancelled: its cancellation removes it
        ++i;
        continue;
      }
      const auto due = static_cast<std::uint64_t>(deadline);
      const std::uint64_t left = (due - tick) >> bits_;
      if (left != 0) {
        if (left < kRoundLabels) entry = BucketStore::entry(node, round_label(due));
        least_ahead = std::min(least_ahead, left);
        ++i;
        continue;
      }
    }
    Timeout* node = BucketStore::node_of(entry);
    // A cancelled timeout stays until the cancellation queue reaches it; that single path
    // retires it (Netty retired it on both paths: netty#14959).
    if (!(unshared_ ? node->expire_unshared() : node->try_transition(Timeout::kExpired))) {
      ++i;
      continue;
    }
    store_.remove_at(bucket, i);  // the last entry, not yet visited, moves to i
    --size;
    ready.push_back(node);
  }
  store_.shrink(bucket);
  if (size == 0) nonempty_.clear(bucket);
  // Entries left with this round's label were cancelled (their cancellation will remove them).
  first_due_round_[bucket] = size == 0 ? kNoRound : round + least_ahead;
  return ready.head;
}

std::optional<std::uint64_t> HashedLayout::ticks_to_next_event(std::uint64_t tick) const {
  if (store_.total() == 0) return std::nullopt;
  // The first visit, in bucket order from `tick`, of a bucket whose first due round has come;
  // failing that (nothing due this turn), the earliest later visit of any bucket. The scan
  // costs one step per non-empty bucket passed, each a tick the worker sleeps through.
  const std::size_t start = tick & mask_;
  std::optional<std::uint64_t> best;
  for (std::size_t from = start, end = mask_ + 1;;) {
    const auto bucket = nonempty_.first_set(from, end);
    if (!bucket) {
      if (end == start || start == 0) break;
      from = 0;
      end = start;
      continue;
    }
    from = *bucket + 1;
    const std::uint64_t offset = (*bucket - start) & mask_;
    const std::uint64_t visit_round = (tick + offset) >> bits_;
    const std::uint64_t due_round = first_due_round_[*bucket];
    if (due_round <= visit_round) return offset;  // no earlier bucket had anything due
    // Its visit in round due_round: ((due_round - visit_round) turns after this one).
    if (due_round != kNoRound) {
      const std::uint64_t distance = offset + ((due_round - visit_round) << bits_);
      if (!best || distance < *best) best = distance;
    }
  }
  return best;
}

void HashedLayout::drain(const std::function<void(Timeout*)>& fn) {
  for (std::uint32_t b = 0; b < store_.buckets() && store_.total() > 0; ++b) {
    store_.take_each(b, fn);
    nonempty_.clear(b);
  }
}

}  // namespace wheel::detail
