// SPDX-License-Identifier: Apache-2.0
#include "hierarchical_layout.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstdlib>

#include "timeout_list.h"

namespace wheel::detail {

HierarchicalLayout::HierarchicalLayout(std::size_t buckets_per_level, bool unshared)
    : bits_(static_cast<unsigned>(std::countr_zero(buckets_per_level))),
      mask_(buckets_per_level - 1),
      store_(buckets_per_level),
      unshared_(unshared) {
  assert(std::has_single_bit(buckets_per_level) && buckets_per_level >= 2);
  nonempty_.emplace_back(buckets_per_level);
}

void HierarchicalLayout::insert(Timeout* node, std::uint64_t due, std::uint64_t tick) {
  const auto deadline = static_cast<std::int64_t>(std::max(due, tick));
  if (unshared_) {
    node->store_deadline_unshared(deadline);
  } else {
    node->set_deadline(deadline);
  }
  place(node, tick);
}

void HierarchicalLayout::place(Timeout* node, std::uint64_t tick) {
  // A cancelled timeout has no deadline left: any bucket will hold it until its cancellation
  // removes it; the current one does.
  const std::int64_t deadline = node->deadline();
  const std::uint64_t due = deadline < 0 ? tick : static_cast<std::uint64_t>(deadline);
  assert(due >= tick);
  const std::uint64_t differ = due ^ tick;
  const std::size_t level =
      differ == 0 ? 0 : static_cast<std::size_t>(std::bit_width(differ) - 1) / bits_;
  while (nonempty_.size() <= level) {  // a new overflow level
    nonempty_.emplace_back(mask_ + 1);
    store_.add_buckets(mask_ + 1);
  }
  const std::uint64_t digit = (due >> (level * bits_)) & mask_;
  store_.push(bucket_id(level, digit), node, 0);
  nonempty_[level].set(digit);
}

void HierarchicalLayout::unlink(Timeout* node) {
  const std::uint32_t id = node->slot_.bucket;
  store_.remove(node);
  if (store_.size(id) == 0) nonempty_[id >> bits_].clear(id & mask_);
}

void HierarchicalLayout::cascade(std::size_t level, std::uint64_t tick) {
  const std::uint64_t digit = (tick >> (level * bits_)) & mask_;
  if (!nonempty_[level].test(digit)) return;
  nonempty_[level].clear(digit);
  // Each lands on a lower level: it agrees with `tick` in this digit and every higher one.
  store_.take_each(bucket_id(level, digit), [&](Timeout* node) { place(node, tick); });
}

Timeout* HierarchicalLayout::collect_due(std::uint64_t tick) {
  // Levels whose current bucket starts at this tick, highest first: tick's lowest k digits are 0.
  std::size_t top = 0;
  while (top + 1 < nonempty_.size() &&
         (tick & ((std::uint64_t{1} << ((top + 1) * bits_)) - 1)) == 0)
    ++top;
  for (std::size_t level = top; level >= 1; --level) cascade(level, tick);

  const auto digit = static_cast<std::uint32_t>(tick & mask_);
  if (!nonempty_[0].test(digit)) return nullptr;
  std::uint32_t size = store_.size(digit);
  TimeoutList ready;
  for (std::uint32_t i = 0; i < size;) {
    Timeout* node = BucketStore::node_of(store_.at(digit, i));
    assert(node->deadline() < 0 || static_cast<std::uint64_t>(node->deadline()) == tick);
    // A cancelled timeout stays until the cancellation queue reaches it (see HashedLayout).
    if (!(unshared_ ? node->expire_unshared() : node->try_transition(Timeout::kExpired))) {
      ++i;
      continue;
    }
    store_.remove_at(digit, i);
    --size;
    ready.push_back(node);
  }
  store_.shrink(digit);
  if (size == 0) nonempty_[0].clear(digit);
  return ready.head;
}

std::optional<std::uint64_t> HierarchicalLayout::ticks_to_next_event(std::uint64_t tick) const {
  if (store_.total() == 0) return std::nullopt;
  std::optional<std::uint64_t> best;
  // Level 0 holds timeouts of the current turn only, due at or after `tick`; a level k >= 1
  // holds those of the current turn of level k+1, in buckets at or after tick's digit k (the
  // bucket of tick's own digit only while its start is `tick` itself: it cascades now).
  for (std::size_t level = 0; level < nonempty_.size(); ++level) {
    const unsigned shift = static_cast<unsigned>(level) * bits_;
    const std::uint64_t digit = (tick >> shift) & mask_;
    const auto bucket = nonempty_[level].first_set(digit, mask_ + 1);
    if (!bucket) continue;
    const std::uint64_t span_mask = (std::uint64_t{1} << shift) - 1;    // lower digits
    const std::uint64_t turn = tick & ~((mask_ << shift) | span_mask);  // higher digits
    const std::uint64_t start = turn | (std::uint64_t{*bucket} << shift);
    assert(start >= tick || level == 0);
    const std::uint64_t distance = start > tick ? start - tick : 0;
    if (!best || distance < *best) best = distance;
    if (distance == 0) break;
  }
  return best;
}

void HierarchicalLayout::drain(const std::function<void(Timeout*)>& fn) {
  for (std::uint32_t id = 0; id < store_.buckets() && store_.total() > 0; ++id) {
    store_.take_each(id, fn);
    nonempty_[id >> bits_].clear(id & mask_);
  }
}

}  // namespace wheel::detail
