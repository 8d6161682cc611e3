// Internal. The wheel itself: 2^k buckets, each a circular intrusive list with a sentinel, plus
// a bitmap of non-empty buckets so the worker can sleep past empty ticks. Worker thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "wheel/timeout.h"

namespace wheel::detail {

class TimerWheel {
 public:
  // REQUIRES: buckets is a power of two.
  explicit TimerWheel(std::size_t buckets);
  TimerWheel(const TimerWheel&) = delete;
  TimerWheel& operator=(const TimerWheel&) = delete;

  std::size_t buckets() const { return sentinels_.size(); }
  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }

  // Appends `timeout` to the bucket of `tick`. O(1).
  void insert(Timeout* timeout, std::uint64_t tick);
  // Unlinks `timeout` from whichever bucket holds it. O(1).
  void unlink(Timeout* timeout);

  // Visits the bucket of `tick`: timeouts with no rounds left that are still INIT become
  // EXPIRED and are unlinked into the returned list (oldest first, linked through Link::next);
  // the others count one round down. Cancelled timeouts are left for the cancellation queue.
  Timeout* collect_due(std::uint64_t tick);

  // Ticks from `tick` to the first tick at or after it whose bucket is non-empty; nullopt when
  // the whole wheel is empty.
  std::optional<std::uint64_t> ticks_to_next_nonempty(std::uint64_t tick) const;

  // Unlinks every timeout, calling fn(Timeout*) for each.
  template <class Fn>
  void drain(Fn&& fn) {
    for (std::size_t b = 0; b < sentinels_.size() && size_ > 0; ++b) {
      Link* sentinel = &sentinels_[b];
      while (sentinel->next != sentinel) {
        Timeout* timeout = static_cast<Timeout*>(sentinel->next);
        unlink(timeout);
        fn(timeout);
      }
    }
  }

 private:
  std::size_t bucket_of(const Link* sentinel) const {
    return static_cast<std::size_t>(sentinel - sentinels_.data());
  }
  void mark(std::size_t bucket) { nonempty_[bucket / 64] |= std::uint64_t{1} << (bucket % 64); }
  void clear(std::size_t bucket) { nonempty_[bucket / 64] &= ~(std::uint64_t{1} << (bucket % 64)); }

  std::vector<Link> sentinels_;
  std::vector<std::uint64_t> nonempty_;  // bit b set <=> bucket b holds a timeout
  std::uint64_t mask_;
  std::size_t size_ = 0;
};

}  // namespace wheel::detail
