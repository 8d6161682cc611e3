// SPDX-License-Identifier: Apache-2.0
// Internal. The hashed layout (Netty's): one wheel of 2^k buckets. A timeout goes to the
// bucket of its due tick and waits there for its remaining rounds (whole turns) to run out;
// each visit of the bucket expires the timeouts that have none left. Instead of a count that
// every visit decrements, an entry holds the round it is due in (a label: the round number
// modulo kRoundLabels), beside the node address in the bucket's entry array (BucketStore):
// remaining rounds = due round - current round, and a visit only compares labels, reading
// contiguous memory without writing it or touching a node. Timeouts kRoundLabels or more
// rounds away are marked kFar and re-checked against their node when visited. Each bucket also
// knows the first round in which anything in it can be due, so a visit before that round
// reads nothing at all (with delays of many turns, most visits). A bitmap of non-empty
// buckets lets the worker sleep past empty ticks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "bucket_bitmap.h"
#include "bucket_store.h"
#include "wheel_layout.h"

namespace wheel::detail {

class HashedLayout final : public WheelLayout {
 public:
  // REQUIRES: buckets is a power of two.
  explicit HashedLayout(std::size_t buckets, bool unshared = false);

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
  static constexpr std::uint64_t kFar = BucketStore::kCounterMax;
  static constexpr std::uint64_t kRoundLabels = BucketStore::kCounterMax;  // labels 0..max-1
  // The label of the round that tick `tick` falls in.
  std::uint64_t round_label(std::uint64_t tick) const { return (tick >> bits_) % kRoundLabels; }

  static constexpr std::uint64_t kNoRound = ~std::uint64_t{0};

  BucketStore store_;
  BucketBitmap nonempty_;
  // Per bucket: no entry is due in a round before this one (round = tick >> bits_).
  std::vector<std::uint64_t> first_due_round_;
  const std::uint64_t mask_;
  const unsigned bits_;  // log2 of the bucket count
  const bool unshared_;  // see make_layout() (wheel_shape.h)
};

}  // namespace wheel::detail
