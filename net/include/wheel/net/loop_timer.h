// SPDX-License-Identifier: Apache-2.0
// LoopTimer: a HashedWheelTimer whose tasks run on one libuv loop's thread.
//
// The wheel turns on the timer's own worker thread; when a timeout expires, its task is handed
// to the loop (a mutex-protected queue and uv_async_send) and runs there, so a task may touch
// the loop's handles freely. Any libuv program can create one on its loop.
//
// Threads: new_timeout(), cancel() and the counters are safe from any thread. Construction and
// close() are loop thread only. Ownership of timeouts as in wheel/timeout.h.
//
// Closing: close() stops the timer's worker, destroys every task that has not run (pending or
// already expired and queued) on the loop thread without running it, and closes the one
// uv_async handle. No task runs after close(). The handle finishes closing on the loop's next
// turn (uv_run), which frees it: the LoopTimer itself may be destroyed right after close().
#pragma once

#include <uv.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <utility>

#include "wheel/hashed_wheel_timer.h"
#include "wheel/timer_options.h"

namespace wheel::net {

class LoopExecutor;

class LoopTimer {
 public:
  // A timer on `loop` with `options` (options.executor is replaced by the hand-off to the loop).
  // The worker thread starts with the first timeout. Throws std::invalid_argument for options
  // the timer rejects, std::system_error when the async handle cannot be created.
  // Loop thread only (or before the loop runs).
  LoopTimer(uv_loop_t* loop, TimerOptions options = {});
  // Closes the timer if close() was not called. Loop thread only.
  ~LoopTimer();

  LoopTimer(const LoopTimer&) = delete;
  LoopTimer& operator=(const LoopTimer&) = delete;

  // Schedules `task` (invocable as task(wheel::Timeout&) or task()) to run on the loop thread
  // once `delay` has passed; returns its handle. Throws as HashedWheelTimer::new_timeout, and
  // std::logic_error after close(). Safe from any thread.
  template <class F, class Rep, class Period>
  TimeoutHandle new_timeout(F&& task, std::chrono::duration<Rep, Period> delay) {
    TimeoutHandle handle = timer_->new_timeout(std::forward<F>(task), delay);
    scheduled_.fetch_add(1, std::memory_order_relaxed);
    return handle;
  }

  // Cancels `timeout` (see Timeout::cancel) and counts the call. Returns true when this call
  // cancelled it; false when it already expired (its task may still be queued for the loop
  // and will run unless close() comes first) or was cancelled. Safe from any thread.
  bool cancel(const TimeoutHandle& timeout);

  // Stops the timer and closes the handle (see the top of this file). Idempotent.
  // REQUIRES: not called from one of this timer's tasks. Loop thread only.
  void close();

  uv_loop_t* loop() const { return loop_; }
  // Timeouts neither run nor cancelled. Safe from any thread.
  std::size_t pending_timeouts() const { return timer_->pending_timeouts(); }
  // How many new_timeout() and cancel() calls this timer has seen. Safe from any thread.
  std::uint64_t timeouts_scheduled() const { return scheduled_.load(std::memory_order_relaxed); }
  std::uint64_t cancel_calls() const { return cancels_.load(std::memory_order_relaxed); }
  // The timer's tick and bucket count after validation. Safe from any thread.
  std::chrono::nanoseconds tick_duration() const { return timer_->tick_duration(); }
  std::size_t ticks_per_wheel() const { return timer_->ticks_per_wheel(); }

 private:
  uv_loop_t* loop_;
  LoopExecutor* executor_;  // frees itself once its handle is closed
  std::unique_ptr<HashedWheelTimer> timer_;
  bool closed_ = false;
  std::atomic<std::uint64_t> scheduled_{0};
  std::atomic<std::uint64_t> cancels_{0};
};

}  // namespace wheel::net
