// SPDX-License-Identifier: Apache-2.0
// Internal. A wheel layout: where pending timeouts wait and how due ones are found, with no
// thread and no clock. Two layouts implement it, chosen by TimerLayout:
//   * HashedLayout (hashed_layout.h, kHashed, Netty's): one wheel of buckets, rounds counted;
//   * HierarchicalLayout (hierarchical_layout.h, kHierarchical, Kafka's): levels that cascade.
// Two drivers own a layout and move its ticks forward:
//   * HashedWheelTimer (TimerCore, timer_worker.cc): a worker thread that sleeps to the next
//     tick with work; producers on any thread reach it through lock-free queues;
//   * LoopWheel (loop_wheel.cc): no thread; an event loop calls advance(now) and next_due().
// Ticks are absolute: tick t is processed once start + (t + 1) * tick_duration has passed.
// The driver's thread only (HashedWheelTimer's worker, and its stopping thread once the worker
// has been joined; the one thread of a LoopWheel).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>

#include "wheel/timeout.h"

namespace wheel::detail {

class WheelLayout {
 public:
  virtual ~WheelLayout() = default;

  // Buckets per wheel (per level for the hierarchical layout).
  virtual std::size_t buckets() const = 0;

  // Adds `node`, due at tick `due` (a tick already processed means `tick`), while `tick` is the
  // next tick to process. Sets the node's deadline to the tick it will fire at (unless cancel()
  // linked it).
  virtual void insert(Timeout* node, std::uint64_t due, std::uint64_t tick) = 0;
  // Removes `node` (it is in the wheel). O(1).
  virtual void unlink(Timeout* node) = 0;
  // Cache hints for unlinking a group of nodes: call prefetch_unlink(node, 0) for each, then
  // prefetch_unlink(node, 1) for each, then unlink them. Unlinking is bound by cache misses.
  virtual void prefetch_unlink(const Timeout* node, int phase) const = 0;

  // Processes tick `tick`: timeouts due now that are still INIT become EXPIRED and are removed
  // into the returned list (linked through queue_next_); cancelled ones stay for the
  // cancellation queue. REQUIRES: ticks are processed in increasing order, and no tick that
  // ticks_to_next_event() would have named is skipped.
  virtual Timeout* collect_due(std::uint64_t tick) = 0;

  // Ticks from `tick` to the next tick at which collect_due() has work (0: `tick` itself);
  // nullopt when the wheel is empty.
  virtual std::optional<std::uint64_t> ticks_to_next_event(std::uint64_t tick) const = 0;

  // The drivers' skip over ticks that would change nothing: moves `tick` to the first tick
  // before `end` at which collect_due() has work and returns true, or, when none has, to `end`
  // and returns false. REQUIRES: tick < end.
  bool skip_to_next_event(std::uint64_t& tick, std::uint64_t end) const {
    const auto distance = ticks_to_next_event(tick);
    if (!distance || *distance >= end - tick) {
      tick = end;
      return false;
    }
    tick += *distance;
    return true;
  }

  // Removes every timeout, calling fn(node) for each.
  virtual void drain(const std::function<void(Timeout*)>& fn) = 0;
};

}  // namespace wheel::detail
