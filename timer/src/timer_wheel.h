// Internal. The hashed layout (Netty's): one wheel of 2^k buckets. A timeout goes to the
// bucket of its due tick with the number of whole turns still to wait (its remaining rounds);
// each visit of the bucket counts the rounds down and expires the timeouts that have none left.
// The rounds live in the bucket's entry array beside the node address (BucketStore), so the
// count-down is a walk over contiguous memory that touches no node. A bitmap of non-empty
// buckets lets the worker sleep past empty ticks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "bucket_bitmap.h"
#include "bucket_store.h"
#include "wheel.h"

namespace wheel::detail {

class TimerWheel final : public Wheel {
 public:
  // REQUIRES: buckets is a power of two.
  explicit TimerWheel(std::size_t buckets);

  std::size_t buckets() const override { return store_.buckets(); }
  void insert(Timeout* node, std::uint64_t due, std::uint64_t tick) override;
  void unlink(Timeout* node) override;
  void prefetch_unlink(const Timeout* node, int phase) const override {
    phase == 0 ? store_.prefetch_entries(node) : store_.prefetch_moved_node(node);
  }
  Timeout* collect_due(std::uint64_t tick) override;
  std::optional<std::uint64_t> ticks_to_next_event(std::uint64_t tick) const override;
  void drain(const std::function<void(Timeout*)>& fn) override;

 private:
  BucketStore store_;
  BucketBitmap nonempty_;
  std::uint64_t mask_;
};

}  // namespace wheel::detail
