// SPDX-License-Identifier: Apache-2.0
// IdleDetector: Netty's IdleStateHandler for any libuv program, independent of protocol and
// socket type. Objects (connections) are watched by id; each embeds an IdleWatch where it
// records its reads and writes (O(1) stores, no timer traffic).
//
// How it works. watch() arms one timeout per enabled kind on a LoopTimer. When one fires (on
// the loop thread), the detector finds the watch again through its Owner by id, never by
// pointer, so a timeout of an object that is gone (destroyed without unwatch()) finds nothing
// and is counted as stale. If
// there was activity since, it re-arms for the remaining time only. Otherwise it re-arms for
// the full time and calls Owner::on_idle(id, event): the event says the kind and whether it is
// the first since the last activity. unwatch() cancels the timeouts; the timer runs on the same
// loop thread, so a cancelled timeout never fires.
//
// Beyond Netty (netty#8912): with Options::observe_output, output that is still draining to a
// slow but live reader (IdleWatch::record_output_progress) counts as write activity, so such a
// connection is not writer-idle (nor all-idle).
//
// Threads: loop thread only, except stale_timeouts(). Every callback runs on the loop thread.
#pragma once

#include <cstdint>

#include "wheel/net/idle_watch.h"
#include "wheel/net/loop_timer.h"

namespace wheel::net {

class IdleDetector {
 public:
  // What the detector needs from the owner of the watched objects. Called on the loop thread.
  class Owner {
   public:
    // The watch of object `id`, or nullptr when it is gone.
    virtual IdleWatch* find_watch(std::uint64_t id) = 0;
    // Object `id` has been idle (see the top of this file). It may unwatch or destroy the
    // object here; the detector has already re-armed that kind.
    virtual void on_idle(std::uint64_t id, IdleEvent event) = 0;

   protected:
    ~Owner() = default;
  };

  struct Options {
    // netty#8912: draining output counts as write activity.
    bool observe_output = false;
  };

  // `timer` and `owner` must outlive the detector (pending timeouts name the detector: close
  // the timer, or unwatch everything, before destroying it). Loop thread only.
  IdleDetector(LoopTimer& timer, Owner& owner, Options options);
  IdleDetector(LoopTimer& timer, Owner& owner) : IdleDetector(timer, owner, Options{}) {}

  IdleDetector(const IdleDetector&) = delete;
  IdleDetector& operator=(const IdleDetector&) = delete;

  // Starts watching object `id` through `watch`: records now as its last read and write and
  // arms a timeout per kind whose time is not 0. `watch` must stay at its address until
  // unwatch(). Throws std::invalid_argument when a time is negative or over kMaxIdleTime, or
  // `id` is 2^62 or more (the timeout packs the kind beside it), std::logic_error when `watch`
  // is already watched. Loop thread only.
  void watch(std::uint64_t id, IdleWatch& watch, const IdleTimes& times);

  // Stops watching: cancels the live timeouts. Idempotent. Loop thread only.
  void unwatch(IdleWatch& watch);

  // The loop time in ms (the timer's: LoopTimer::now_ms()), to pass to IdleWatch::record_*().
  // Loop thread only.
  std::uint64_t now_ms() const { return timer_.now_ms(); }

  // Timeouts that fired for an id the owner no longer knew. Loop thread only.
  std::uint64_t stale_timeouts() const { return stale_; }

 private:
  struct Task;

  void arm(std::uint64_t id, IdleWatch& watch, IdleKind kind, std::uint64_t delay_ms);
  void on_timeout(std::uint64_t id, IdleKind kind, LoopWheel::Handle fired);

  LoopTimer& timer_;
  Owner& owner_;
  Options options_;
  std::uint64_t stale_ = 0;
};

}  // namespace wheel::net
