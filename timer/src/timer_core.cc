// SPDX-License-Identifier: Apache-2.0
// TimerCore's construction and destruction, new_timeout()'s and cancel()'s side (reserving a
// slot, submitting, queueing a cancellation, waking the worker) and the clock readings.
#include "timer_core.h"

#include <algorithm>
#include <cassert>
#include <exception>
#include <stdexcept>
#include <string>

#include <spdlog/spdlog.h>

#include "wheel/logger.h"
#include "wheel/manual_clock.h"

#include "cycle_clock.h"
#include "wheel/detail/saturating.h"
#include "wheel/rejected_execution_error.h"
#include "wheel_shape.h"

namespace wheel::detail {

namespace {

// The timer whose task the calling thread is running, if any (see TaskScope).
thread_local const TimerCore* current_task_core = nullptr;

}  // namespace

TimerCore::TaskScope::TaskScope(const TimerCore* core) noexcept : saved_(current_task_core) {
  current_task_core = core;
}
TimerCore::TaskScope::~TaskScope() {
  current_task_core = saved_;
}
bool TimerCore::in_own_task() const noexcept {
  return current_task_core == this;
}

TimerCore::TimerCore(HashedWheelTimer& owner, TimerOptions options, ManualClock* manual)
    : owner_(owner),
      manual_(manual),
      tick_(options.tick_duration),
      max_pending_(options.max_pending_timeouts),
      thread_name_(std::move(options.thread_name)),
      executor_(std::move(options.executor)),
      tick_observer_(std::move(options.tick_observer)),
      layout_(make_layout(options.layout, options.ticks_per_wheel, false)) {
  gate_->core = this;
}

TimerCore::~TimerCore() {
  if (manual_ != nullptr) manual_->detach(this);
  try {
    stop();
  } catch (const std::exception& e) {  // destroyed from its own task: the worker cannot join itself
    wheel::logger()->critical("wheel: {}; a timer must not be destroyed from its own task",
                              e.what());
    std::terminate();
  }
  close_gate();  // a timer that never started
  // A new_timeout() or cancel() that raced with stop() may have queued after it collected.
  collect_remaining(nullptr);
  assert(pending_.load() == 0);
}

void TimerCore::reserve_slot() {
  if (const RunState state = run_state_.load(std::memory_order_acquire);
      state != RunState::kStarted) {
    if (state == RunState::kShutdown) {
      throw std::logic_error("new_timeout: the timer has been stopped");
    }
    if (state == RunState::kDraining) {
      if (!in_own_task()) throw std::logic_error("new_timeout: the timer is draining");
    } else {
      start();
    }
  }
  if (max_pending_ <= 0) {
    pending_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  std::int64_t count = pending_.load(std::memory_order_relaxed);
  do {
    if (count >= max_pending_) {
      throw RejectedExecutionError("new_timeout: " + std::to_string(count) +
                                   " pending timeouts reach max_pending_timeouts (" +
                                   std::to_string(max_pending_) + ")");
    }
  } while (!pending_.compare_exchange_weak(count, count + 1, std::memory_order_relaxed));
}

TimeoutHandle TimerCore::submit(Timeout* node, std::chrono::nanoseconds delay) {
  const std::int64_t deadline = saturating_add(stamp_ns(), delay.count());
  // A deadline already past fires on the next tick either way; the field wants it >= 0.
  node->deadline_or_link_.store(std::max<std::int64_t>(deadline, 0), std::memory_order_relaxed);
  if (node->is_periodic()) static_cast<PeriodicTimeout*>(node)->deadline_ns_ = deadline;
  submissions_.push(node);
  wake_if_sleeping(kWakeForSubmit);
  return TimeoutHandle(node, TimeoutHandle::Adopt{});
}

void TimerCore::enqueue_cancel(Timeout* node) {
  cancellations_.push(node);
  wake_if_sleeping(kWakeForCancel);
}

void TimerCore::wake_if_sleeping(std::uint8_t reason) {
  // Pairs with the worker's store of sleeping_ and its re-check of the queues (both seq_cst):
  // either the worker sees our push, or we see it asleep. exchange() lets one producer notify.
  if ((sleeping_.load(std::memory_order_seq_cst) & reason) != 0 && sleeping_.exchange(0) != 0) {
    std::lock_guard lock(sleep_mutex_);
    wake_.notify_one();
  }
}

std::int64_t TimerCore::elapsed_ns() const {
  if (manual_ != nullptr) return manual_->now().count() - manual_start_ns_;
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                              start_time_)
      .count();
}

std::int64_t TimerCore::stamp_ns() const {
  if (manual_ != nullptr) [[unlikely]] {
    return elapsed_ns();
  }
  // The fast path: the cycle counter's upper bound of steady_clock (cycle_clock.h).
  return CycleClock::steady_upper_ns() -
         std::chrono::duration_cast<std::chrono::nanoseconds>(start_time_.time_since_epoch())
             .count();
}

}  // namespace wheel::detail

namespace wheel {

// A pending timeout costs a 32-byte node plus its task, and an 8-byte entry in its wheel bucket
// (on 64-bit targets).
static_assert(sizeof(void*) != 8 || sizeof(detail::TaskTimeout<void (*)()>) == 40);

// The timer's side of a Timeout: cancel() queues it for the worker; tasks run in a TaskScope.
bool Timeout::cancel() {
  if (try_transition(kCancelled)) {
    // Still referenced by the timer here: only the cancellation queue can retire it now.
    core_->enqueue_cancel(this);
    return true;
  }
  if (!is_periodic()) return false;
  // A periodic timeout with a run due or in progress: whoever runs it retires it (its run, if
  // not started yet, never starts). It may be re-armed (INIT) meanwhile: try again.
  for (;;) {
    std::uint8_t state = state_.load(std::memory_order_acquire);
    if (state == kInit) {
      if (try_transition(kCancelled)) {
        core_->enqueue_cancel(this);
        return true;
      }
    } else if (state == kExpired || state == kRunning) {
      if (state_.compare_exchange_strong(state, kCancelled, std::memory_order_acq_rel)) {
        return true;
      }
    } else {
      return false;
    }
  }
}

HashedWheelTimer& Timeout::timer() const {
  return core_->owner();
}

void Timeout::invoke_guarded() noexcept {
  const detail::TimerCore::TaskScope scope(core_);  // new_timeout() may be called while draining
  try {
    invoke();
  } catch (const std::exception& e) {
    wheel::logger()->warn("wheel: a timer task threw an exception: {}", e.what());
  } catch (...) {
    wheel::logger()->warn("wheel: a timer task threw a non-standard exception");
  }
}

}  // namespace wheel
