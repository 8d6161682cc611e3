// SPDX-License-Identifier: Apache-2.0
// Which active connections send PING at each tick: a ring with one slot per tick of the PING
// interval, each connection in one slot picked at random. The jitter spreads the PINGs of
// thousands of connections evenly over the interval, with one timer for all of them.
//
// Not thread-safe: owned by one loop.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

namespace wheel::load {

class PingRing {
 public:
  // A ring of max(1, interval / tick) slots; a connection PINGs once per lap, so the effective
  // interval is slot_count() * tick (the interval rounded down to whole ticks, at least one).
  // REQUIRES: tick > 0.
  PingRing(std::chrono::milliseconds interval, std::chrono::milliseconds tick);

  std::size_t slot_count() const { return slots_.size(); }

  // Puts connection `id` in slot `slot % slot_count()`; it is visited once per lap from then on.
  void add(std::uint32_t id, std::uint64_t slot) { slots_[slot % slots_.size()].push_back(id); }

  // Visits, in tick order, the connections of every tick after the previous call up to and
  // including the tick that contains `now_ms` (time since the ring's start), calling
  // `visit(id)` for each. A late call catches up, but by at most one lap: no connection is
  // visited twice in one call. The first call covers ticks 1..now.
  template <typename Visit>
  void advance(double now_ms, Visit&& visit) {
    const auto tick = static_cast<std::int64_t>(now_ms / tick_ms_);
    const auto lap = static_cast<std::int64_t>(slots_.size());
    for (std::int64_t k = std::max(last_tick_ + 1, tick - lap + 1); k <= tick; ++k) {
      for (std::uint32_t id : slots_[static_cast<std::size_t>(k % lap)]) visit(id);
    }
    last_tick_ = std::max(last_tick_, tick);
  }

 private:
  double tick_ms_;
  std::int64_t last_tick_ = 0;
  std::vector<std::vector<std::uint32_t>> slots_;
};

}  // namespace wheel::load
