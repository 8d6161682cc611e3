#include "timer_wheel.h"

#include <bit>
#include <cassert>

namespace wheel::detail {

TimerWheel::TimerWheel(std::size_t buckets)
    : sentinels_(buckets), nonempty_((buckets + 63) / 64, 0), mask_(buckets - 1) {
  assert(std::has_single_bit(buckets));
  for (Link& sentinel : sentinels_) sentinel.next = sentinel.prev = &sentinel;
}

void TimerWheel::insert(Timeout* timeout, std::uint64_t tick) {
  const std::size_t bucket = tick & mask_;
  Link* sentinel = &sentinels_[bucket];
  Link* node = timeout;
  node->prev = sentinel->prev;
  node->next = sentinel;
  sentinel->prev->next = node;
  sentinel->prev = node;
  mark(bucket);
  ++size_;
}

void TimerWheel::unlink(Timeout* timeout) {
  Link* node = timeout;
  Link* prev = node->prev;
  Link* next = node->next;
  prev->next = next;
  next->prev = prev;
  node->next = node->prev = nullptr;
  // Only a sentinel can be left pointing at itself: that bucket is now empty.
  if (prev == next && prev->next == prev) clear(bucket_of(prev));
  assert(size_ > 0);
  --size_;
}

Timeout* TimerWheel::collect_due(std::uint64_t tick) {
  Link* sentinel = &sentinels_[tick & mask_];
  Timeout* ready_head = nullptr;
  Link* ready_tail = nullptr;
  for (Link* node = sentinel->next; node != sentinel;) {
    Timeout* timeout = static_cast<Timeout*>(node);
    node = node->next;
    if (timeout->deadline_or_rounds_ > 0) {
      --timeout->deadline_or_rounds_;
      continue;
    }
    // A cancelled timeout stays linked until the cancellation queue reaches it; that single
    // path retires it (Netty retired it on both paths: netty#14959).
    if (!timeout->try_transition(Timeout::kExpired)) continue;
    unlink(timeout);
    if (ready_tail == nullptr) {
      ready_head = timeout;
    } else {
      ready_tail->next = timeout;
    }
    ready_tail = timeout;
  }
  return ready_head;
}

std::optional<std::uint64_t> TimerWheel::ticks_to_next_nonempty(std::uint64_t tick) const {
  if (size_ == 0) return std::nullopt;
  const std::size_t start = tick & mask_;
  const std::size_t words = nonempty_.size();
  std::size_t word = start / 64;
  // First the start word from the start bit on, then the following words, wrapping round to
  // the start word's lower bits.
  std::uint64_t bits = nonempty_[word] & (~std::uint64_t{0} << (start % 64));
  for (std::size_t step = 0; step <= words; ++step) {
    if (bits != 0) {
      const std::size_t bucket = word * 64 + static_cast<std::size_t>(std::countr_zero(bits));
      return (bucket - start) & mask_;
    }
    word = (word + 1) % words;
    bits = nonempty_[word];
  }
  return std::nullopt;  // unreachable while size_ > 0
}

}  // namespace wheel::detail
