// SPDX-License-Identifier: Apache-2.0
// Internal. The hierarchical layout (Kafka's TimingWheel, with levels aligned on absolute ticks
// as in the Linux and tokio timer wheels): levels of W = 2^b buckets each; a bucket of level k
// spans W^k ticks, one whole turn of level k-1. A timeout due at tick d, inserted while the next
// tick is t, goes to the level of the highest base-W digit in which d and t differ, into the
// bucket named by d's digit there. When the current tick reaches the start of a bucket of level
// k >= 1 the bucket cascades: its timeouts are inserted again and land on lower levels. A
// level-0 bucket holds only timeouts due at the tick it names, so a visit expires all of them.
// Levels are created on demand, when a timeout first needs one. Per tick the work is the due
// timeouts plus the cascaded ones; the worker sleeps until the next non-empty level-0 bucket
// or the next cascade.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "bucket_bitmap.h"
#include "bucket_store.h"
#include "wheel_layout.h"

namespace wheel::detail {

class HierarchicalLayout final : public WheelLayout {
 public:
  // REQUIRES: buckets_per_level is a power of two >= 2.
  explicit HierarchicalLayout(std::size_t buckets_per_level, bool unshared = false);

  std::size_t buckets() const override { return std::size_t{1} << bits_; }
  void insert(Timeout* node, std::uint64_t due, std::uint64_t tick) override;
  void unlink(Timeout* node) override;
  void prefetch_unlink(const Timeout* node, int phase) const override {
    phase == 0 ? store_.prefetch_entries(node) : store_.prefetch_moved_node(node);
  }
  Timeout* collect_due(std::uint64_t tick) override;
  std::optional<std::uint64_t> ticks_to_next_event(std::uint64_t tick) const override;
  void drain(const std::function<void(Timeout*)>& fn) override;

  // Levels created so far (for tests and diagnostics).
  std::size_t levels() const { return nonempty_.size(); }

 private:
  // Places `node` (deadline set, >= tick; or cancelled) relative to `tick`.
  void place(Timeout* node, std::uint64_t tick);
  std::uint32_t bucket_id(std::size_t level, std::uint64_t digit) const {
    return static_cast<std::uint32_t>((level << bits_) + digit);
  }
  void cascade(std::size_t level, std::uint64_t tick);

  const unsigned bits_;                 // b: W = 2^b buckets per level
  const std::uint64_t mask_;            // W - 1
  BucketStore store_;                   // level k's buckets are ids k*W .. k*W + W-1
  std::vector<BucketBitmap> nonempty_;  // one per level
  const bool unshared_;                 // see make_layout() (wheel_shape.h)
};

}  // namespace wheel::detail
