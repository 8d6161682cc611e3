// SPDX-License-Identifier: Apache-2.0
// ManualClock: a clock that stands still until the test moves it (Netty users' Ticker), so tests
// of code built on the timer run without waiting and without depending on a prompt scheduler.
//
//   * A HashedWheelTimer built with TimerOptions::clock = &clock starts no worker thread. Each
//     advance() does, on the calling thread and before it returns, what the worker of every
//     started timer on this clock would have done by then: due tasks run there (or go to the
//     timer's executor). Deadlines are measured on this clock from the moment the timer started.
//   * A LoopWheel needs nothing: pass clock.now() to its constructor and to advance().
//   * A wheel::net::LoopTimer built on the clock reads it instead of the steady clock and never
//     sleeps on its uv timer: each advance() runs its due tasks on the calling thread (which
//     must be the loop's).
//
// Not thread-safe: one thread moves the clock and uses the timers built on it (their tasks run
// on that thread). A timer on a manual clock cannot drain() (nothing would advance the clock
// while it waits): drain() throws std::logic_error there.
#pragma once

#include <chrono>
#include <vector>

namespace wheel {

namespace detail {

// What a ManualClock drives: a timer started on it. Internal (implemented by the timer).
class ClockDriven {
 public:
  // What the timer's worker would do on waking at the clock's present.
  virtual void run_worker_once() = 0;

 protected:
  ~ClockDriven() = default;
};
}  // namespace detail

class ManualClock {
 public:
  // A clock reading `start` (0 by default).
  explicit ManualClock(std::chrono::nanoseconds start = std::chrono::nanoseconds::zero())
      : now_(start) {}
  // REQUIRES: every timer built on the clock has been stopped or destroyed.
  ~ManualClock();
  ManualClock(const ManualClock&) = delete;
  ManualClock& operator=(const ManualClock&) = delete;

  // The present: nanoseconds since the clock's origin.
  std::chrono::nanoseconds now() const noexcept { return now_; }

  // Moves the clock forward by `by` (saturating) and runs, here, what every started timer on it
  // has due by the new present. Throws std::invalid_argument when `by` is negative,
  // std::logic_error when called from a task of one of those timers.
  void advance(std::chrono::nanoseconds by);
  // advance() to the reading `to`. Throws std::invalid_argument when `to` is before now().
  void advance_to(std::chrono::nanoseconds to);

  // For the timers built on this clock (HashedWheelTimer, wheel::net::LoopTimer), not for their
  // users: every advance() from now on runs `timer` once, until detach(timer). `timer` must be
  // detached before it is destroyed; detaching one not attached does nothing.
  void attach(detail::ClockDriven* timer);
  void detach(detail::ClockDriven* timer) noexcept;

 private:
  std::chrono::nanoseconds now_;
  std::vector<detail::ClockDriven*> timers_;  // started, not stopped
  bool advancing_ = false;
};

}  // namespace wheel
