// HashedWheelTimer: a Netty-style hashed timing wheel for very many, mostly cancelled timeouts.
//
// Algorithm. A wheel of 2^k buckets, each an intrusive circular list. One worker thread advances
// the wheel every tick: it moves new timeouts from a lock-free submission queue into the bucket
// `deadline_tick & mask` (at most 100,000 a tick), unlinks timeouts whose cancellation was queued,
// then visits the current bucket: timeouts whose `remaining rounds` reached 0 expire, the others
// count one round down. Schedule and cancel are O(1) and never take a lock.
//
// Timing. Ticks sit at absolute deadlines start + k * tick, so error does not accumulate. A task
// never runs before its full delay has passed (steady_clock) and is late by about one tick at
// most while the worker is not blocked. Unlike Netty's, an idle wheel costs nothing: the worker
// sleeps until the next tick whose bucket holds something, and with nothing pending until
// new_timeout() wakes it.
//
// Threads. new_timeout(), Timeout::cancel(), pending_timeouts() and stop() are safe from any
// thread (stop() not from a task). Tasks run on the worker thread one after another, or, with
// TimerOptions::executor, wherever the executor runs them. A task may schedule and cancel.
// Expire first, then invoke: the worker first moves every due timeout of a bucket to a ready
// list, then runs them, so a task cancelling a neighbour cannot corrupt the walk.
//
// Ownership: see timeout.h. Errors: misuse of the API throws (std::invalid_argument,
// std::logic_error, RejectedExecutionError); an exception thrown by a task is caught and logged.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#include "wheel/detail/task_timeout.h"
#include "wheel/rejected_execution_error.h"
#include "wheel/timeout.h"
#include "wheel/timer_job.h"
#include "wheel/timer_options.h"

namespace wheel {

class HashedWheelTimer {
 public:
  // A timer with all default options.
  HashedWheelTimer();
  // Validates the options: tick_duration <= 0, ticks_per_wheel == 0 or > 2^30, or
  // tick_duration * ticks_per_wheel overflowing throw std::invalid_argument naming the option.
  // The worker starts on start() or on the first new_timeout().
  explicit HashedWheelTimer(TimerOptions options);
  // Stops the timer (see stop()); tasks that never ran are destroyed without running.
  // REQUIRES: no other thread is using the timer.
  ~HashedWheelTimer();

  HashedWheelTimer(const HashedWheelTimer&) = delete;
  HashedWheelTimer& operator=(const HashedWheelTimer&) = delete;

  // Schedules `task` to run once `delay` has passed and returns its handle. `task` is any
  // callable, move-only ones included, invocable as task(wheel::Timeout&) or task(). `delay` is
  // any std::chrono::duration; zero and negative delays run on the next tick, delays beyond
  // nanoseconds::max() clamp to it ("practically never"). Starts the worker if needed.
  // Throws std::invalid_argument for an empty callable, std::logic_error after stop(),
  // RejectedExecutionError when max_pending_timeouts are pending (the count is then unchanged).
  // Safe from any thread, tasks included.
  template <class F, class Rep, class Period>
  requires detail::TimerTask<std::decay_t<F>> TimeoutHandle
  new_timeout(F&& task, std::chrono::duration<Rep, Period> delay) {
    using Task = std::decay_t<F>;
    if constexpr (std::is_pointer_v<Task> || std::is_member_pointer_v<Task> ||
                  requires(const Task& t) { t.operator bool(); }) {
      if (!static_cast<bool>(task)) throw std::invalid_argument("new_timeout: task is empty");
    }
    reserve_slot();
    Timeout* node = nullptr;
    try {
      node = new detail::TaskTimeout<Task>(core_.get(), std::forward<F>(task));
    } catch (...) {
      release_slot();
      throw;
    }
    return submit(node, detail::saturating_nanoseconds(delay));
  }

  // Starts the worker thread if it is not running. Throws std::logic_error after stop().
  // Safe from any thread.
  void start();

  // Stops the worker: wakes and joins it (a task already running finishes first), then returns
  // every timeout that had neither run nor been cancelled, each now marked cancelled and its
  // task destroyed. A second stop() and a stop() before any start return nothing.
  // Throws std::logic_error when called from a task on the worker thread.
  // Safe from any other thread.
  std::vector<TimeoutHandle> stop();

  // Timeouts scheduled that have neither run nor had their cancellation processed. Never
  // negative. Safe from any thread.
  std::size_t pending_timeouts() const;

  // The tick after validation (at least 1 ms).
  std::chrono::nanoseconds tick_duration() const;
  // The bucket count after rounding up to a power of two.
  std::size_t ticks_per_wheel() const;

 private:
  void reserve_slot();
  void release_slot() noexcept;
  TimeoutHandle submit(Timeout* node, std::chrono::nanoseconds delay);

  std::unique_ptr<detail::TimerCore> core_;
};

}  // namespace wheel
