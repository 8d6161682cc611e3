// SPDX-License-Identifier: Apache-2.0
// The worker's loop: it sleeps until the next due tick (or a wake-up), then moves submissions
// into the wheel, retires cancellations and runs (or hands over) what is due. On a ManualClock
// the same steps run from ManualClock::advance() instead (run_worker_once()).
#include <pthread.h>
#include <sys/prctl.h>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <exception>
#include <mutex>
#include <optional>

#include <spdlog/spdlog.h>

#include "timer_core.h"
#include "wheel/logger.h"

namespace wheel::detail {

bool TimerCore::has_queued_work() const {
  return backlog_.head != nullptr || !submissions_.empty() || !cancellations_.empty();
}

void TimerCore::worker_main() {
  worker_id_.store(std::this_thread::get_id(), std::memory_order_release);
  pthread_setname_np(pthread_self(), thread_name_.substr(0, 15).c_str());
  // Linux lets a timed sleep overrun by the thread's timer slack (50 us by default); the worker
  // sleeps to exact tick deadlines and few times a second, so it asks for none.
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  const std::int64_t tick_ns = tick_.count();
  const auto max_sleep_ticks = static_cast<std::uint64_t>(
      std::max<std::int64_t>(1, std::chrono::nanoseconds(kMaxSleep).count() / tick_ns));
  // Thread ids are reused once a thread ends: forget ours so that no later thread looks like it.
  struct ForgetWorkerId {
    std::atomic<std::thread::id>* id;
    ~ForgetWorkerId() { id->store(std::thread::id(), std::memory_order_release); }
  } forget{&worker_id_};
  WorkerPosition at;
  for (;;) {
    const std::uint64_t tick = at.tick;
    std::optional<std::uint64_t> target;
    if (has_queued_work()) {
      target = tick;
    } else if (auto distance = layout_->ticks_to_next_event(tick)) {
      // The next event may lie centuries ahead (hierarchical layout, huge delays): sleep at
      // most kMaxSleep at a time so that the deadline arithmetic cannot overflow.
      target = tick + std::min(*distance, max_sleep_ticks);
    }
    // A new timeout needs the worker before `target` only when it sleeps past the next tick; a
    // cancellation always does (pending_timeouts() should drop soon), unless it polls anyway.
    // No wake-up for a cancellation either when the worker is up within kCancelPoll anyway.
    const bool poll = !cancellations_.empty();
    std::uint8_t wake_for = 0;
    if (!poll) {
      if (!target || start_time_ + tick_ * static_cast<std::int64_t>(*target + 1) >
                         std::chrono::steady_clock::now() + kCancelPoll) {
        wake_for = kWakeForCancel;
      }
      if (!target || *target > tick) wake_for |= kWakeForSubmit;
    }
    if (!sleep_until(target, wake_for, poll)) return;
    process_due_ticks(at);
  }
}

void TimerCore::process_due_ticks(WorkerPosition& at) {
  const std::int64_t tick_ns = tick_.count();
  // Between ticks, cancellations are drained once they pause for kCancelPoll: pending drops
  // about a millisecond after a burst of cancel() calls whatever the tick, and the worker does
  // not compete with the canceller for the nodes' cache lines meanwhile. Ticks drain them too.
  // Only the worker pops, so an unchanged head means nothing was pushed since.
  Timeout* cancel_head = cancellations_.peek();
  if (cancel_head != nullptr && cancel_head == at.cancel_head_seen) {
    process_cancellations();
    cancel_head = nullptr;
  }
  at.cancel_head_seen = cancel_head;

  // Process every due tick, skipping those with an empty bucket and nothing queued: they
  // would change nothing. An empty wheel lets the count jump straight to now.
  std::uint64_t& tick = at.tick;
  std::int64_t now_ns = elapsed_ns();
  std::uint64_t due_end = static_cast<std::uint64_t>(now_ns / tick_ns);
  while (tick < due_end && !shutdown_.load(std::memory_order_acquire)) {
    if (!has_queued_work() && !layout_->skip_to_next_event(tick, due_end)) break;
    if (tick_observer_) {
      // tick < due_end, so its deadline (tick + 1) * tick_ns <= now_ns: no overflow, >= 0.
      tick_observer_(
          std::chrono::nanoseconds(now_ns - static_cast<std::int64_t>(tick + 1) * tick_ns));
    }
    process_tick(tick);
    ++tick;
    now_ns = elapsed_ns();
    due_end = static_cast<std::uint64_t>(now_ns / tick_ns);
  }
}

void TimerCore::run_worker_once() {
  process_due_ticks(manual_position_);
}

bool TimerCore::sleep_until(std::optional<std::uint64_t> target_tick, std::uint8_t wake_for,
                            bool poll) {
  std::unique_lock lock(sleep_mutex_);
  if (shutdown_.load(std::memory_order_acquire)) return false;
  if (wake_for != 0) {
    sleeping_.store(wake_for, std::memory_order_seq_cst);
    const bool submitted = backlog_.head != nullptr || !submissions_.empty();
    if (((wake_for & kWakeForSubmit) != 0 && submitted) ||
        ((wake_for & kWakeForCancel) != 0 && !cancellations_.empty())) {
      sleeping_.store(0, std::memory_order_relaxed);
      return true;
    }
  }
  const auto woken = [&] {
    return shutdown_.load(std::memory_order_acquire) ||
           (wake_for != 0 && sleeping_.load(std::memory_order_acquire) == 0);
  };
  if (target_tick || poll) {
    auto deadline = std::chrono::steady_clock::time_point::max();
    if (target_tick) deadline = start_time_ + tick_ * static_cast<std::int64_t>(*target_tick + 1);
    if (poll) deadline = std::min(deadline, std::chrono::steady_clock::now() + kCancelPoll);
    wake_.wait_until(lock, deadline, woken);
  } else {
    wake_.wait(lock, woken);
  }
  sleeping_.store(0, std::memory_order_relaxed);
  return !shutdown_.load(std::memory_order_acquire);
}

void TimerCore::process_tick(std::uint64_t tick) {
  transfer_pending(tick);
  process_cancellations();
  run_ready(layout_->collect_due(tick));
}

void TimerCore::take_submissions() {
  Timeout* newest = nullptr;
  if (Timeout* oldest = submissions_.take_all_oldest_first(&newest)) {
    backlog_.append(oldest, newest);
  }
}

void TimerCore::transfer_pending(std::uint64_t tick) {
  take_submissions();
  const std::int64_t tick_ns = tick_.count();
  // The walk keeps the backlog's head in a local and stores it once at the end.
  Timeout* head = backlog_.head;
  for (std::size_t moved = 0; head != nullptr && moved < kMaxTransfersPerTick; ++moved) {
    Timeout* node = head;
    head = head->queue_next_;
    node->queue_next_ = nullptr;

    // Negative once cancel() has put its link there (the state is CANCELLED then).
    const std::int64_t deadline = node->deadline();
    if (deadline < 0 || node->state_.load(std::memory_order_acquire) == Timeout::kCancelled) {
      if (node->place_ == Timeout::kCancelSeenInQueue) {
        node->retire();  // its task is gone already
      } else {
        node->place_ = Timeout::kDetached;  // its cancellation will retire it
      }
      continue;
    }
    // Tick t is processed once start + (t + 1) * tick has passed: the first tick boundary at or
    // after the deadline. A deadline already past lands on the current tick.
    const std::uint64_t due = deadline <= 0 ? 0 : static_cast<std::uint64_t>(deadline / tick_ns);
    node->place_ = Timeout::kInWheel;
    layout_->insert(node, due, tick);
  }
  backlog_.head = head;
}

std::size_t TimerCore::process_cancellations() {
  // Order does not matter here, so the stack is not reversed. Nodes are handled in groups whose
  // wheel entries are prefetched first.
  constexpr std::size_t kGroup = 16;
  Timeout* node = cancellations_.take_all();
  std::size_t processed = 0;
  std::int64_t retired = 0;
  while (node != nullptr) {
    Timeout* group[kGroup];
    std::size_t size = 0;
    for (; node != nullptr && size < kGroup; node = CancelLink::get(node)) {
      group[size++] = node;
    }
    for (int phase = 0; phase < 2; ++phase) {
      for (std::size_t i = 0; i < size; ++i) {
        if (group[i]->place_ == Timeout::kInWheel) layout_->prefetch_unlink(group[i], phase);
      }
    }
    for (std::size_t i = 0; i < size; ++i) {
      Timeout* t = group[i];
      switch (t->place_) {
        case Timeout::kInWheel:
          layout_->unlink(t);
          t->retire();
          ++retired;
          break;
        case Timeout::kDetached:
          t->retire();
          ++retired;
          break;
        case Timeout::kInQueue:
          // Still in the submission backlog: finish all but the reference now; the transfer
          // drops that when it meets the node.
          t->drop_task();
          t->place_ = Timeout::kCancelSeenInQueue;
          ++retired;
          break;
        default:
          assert(false && "cancellation queued twice");
      }
    }
    processed += size;
  }
  if (retired > 0) count_out(retired);
  return processed;
}

void TimerCore::run_ready(Timeout* ready) {
  while (ready != nullptr) {
    Timeout* node = ready;
    ready = node->queue_next_;
    node->queue_next_ = nullptr;
    if (executor_) {
      hand_over(node);
    } else if (node->is_periodic()) {
      run_periodic_here(node);
    } else {
      node->invoke_guarded();
      node->retire();
      count_out(1);
    }
  }
}

void TimerCore::hand_over(Timeout* node) {
  if (node->is_periodic()) {
    // Stays pending while out: its job comes back to re-arm it (finish_periodic_job).
    std::lock_guard lock(gate_->mutex);
    node->place_ = Timeout::kAtExecutor;
    ++gate_->out;
  } else {
    node->place_ = Timeout::kRetired;
    count_out(1);
  }
  try {
    executor_(TimerJob(node));
  } catch (const std::exception& e) {
    wheel::logger()->error("wheel: the timer executor threw, task dropped: {}", e.what());
  } catch (...) {
    wheel::logger()->error("wheel: the timer executor threw, task dropped");
  }
}

}  // namespace wheel::detail
