// SPDX-License-Identifier: Apache-2.0
// start(), stop() and drain(), and collecting what a stopped timer still holds.
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "timer_core.h"
#include "wheel/manual_clock.h"

namespace wheel::detail {

void TimerCore::start() {
  // Whether start() has work to do: not when started or draining already; never once stopped.
  const auto not_yet_started = [this] {
    switch (run_state_.load(std::memory_order_acquire)) {
      case RunState::kStarted:
      case RunState::kDraining:
        return false;
      case RunState::kShutdown:
        throw std::logic_error("HashedWheelTimer cannot be started once stopped");
      case RunState::kInit:
        break;
    }
    return true;
  };
  // Checked before locking: a task calling start() while stop() joins its worker must not block.
  if (!not_yet_started()) return;
  std::lock_guard lock(start_mutex_);
  if (!not_yet_started()) return;
  if (manual_ != nullptr) {
    manual_start_ns_ = manual_->now().count();
    manual_->attach(this);  // no worker thread: ManualClock::advance() stands in for it
  } else {
    start_time_ = std::chrono::steady_clock::now();
    worker_ = std::thread([this] { worker_main(); });
  }
  run_state_.store(RunState::kStarted, std::memory_order_release);
}

std::vector<TimerJob> TimerCore::stop() {
  if (std::this_thread::get_id() == worker_id_.load(std::memory_order_acquire) ||
      (manual_ != nullptr && in_own_task())) {
    throw std::logic_error("HashedWheelTimer::stop() cannot be called from a timer task");
  }
  {
    std::lock_guard lock(start_mutex_);
    const RunState previous = run_state_.exchange(RunState::kShutdown, std::memory_order_seq_cst);
    if (previous != RunState::kStarted && previous != RunState::kDraining) {
      return {};  // never started, or already stopped (or being stopped by another thread)
    }
  }
  {
    std::lock_guard lock(drain_mutex_);  // a drain() waiting elsewhere returns
    drained_.notify_all();
  }
  {
    std::lock_guard sleep_lock(sleep_mutex_);
    shutdown_.store(true, std::memory_order_release);
  }
  wake_.notify_all();
  if (manual_ != nullptr) {
    manual_->detach(this);
  } else {
    worker_.join();
  }
  close_gate();
  std::vector<TimerJob> unprocessed;
  unprocessed.reserve(pending());
  collect_remaining(&unprocessed);
  return unprocessed;
}

std::vector<TimerJob> TimerCore::drain() {
  if (manual_ != nullptr) {
    throw std::logic_error("HashedWheelTimer::drain() cannot wait on a ManualClock");
  }
  if (in_own_task() || std::this_thread::get_id() == worker_id_.load(std::memory_order_acquire)) {
    throw std::logic_error("HashedWheelTimer::drain() cannot be called from a timer task");
  }
  {
    std::lock_guard lock(start_mutex_);
    if (run_state_.load(std::memory_order_acquire) == RunState::kStarted) {
      run_state_.store(RunState::kDraining, std::memory_order_seq_cst);
    }
  }
  {
    // count_out() notifies when pending_ reaches 0; the bounded wait covers a notification
    // that raced with the store of kDraining above.
    std::unique_lock lock(drain_mutex_);
    while (run_state_.load(std::memory_order_seq_cst) == RunState::kDraining &&
           pending_.load(std::memory_order_seq_cst) > 0) {
      drained_.wait_for(lock, std::chrono::milliseconds(50));
    }
  }
  return stop();
}

void TimerCore::notify_drained() noexcept {
  std::lock_guard lock(drain_mutex_);
  drained_.notify_all();
}

void TimerCore::collect_remaining(std::vector<TimerJob>* unprocessed) {
  // Cancellations first, so that the sweep below only meets timeouts nobody cancelled yet.
  process_cancellations();
  const auto sweep = [&](Timeout* node) {
    if (node->place_ == Timeout::kCancelSeenInQueue) {  // cancellation done, reference left
      node->retire();
    } else if (node->try_transition(Timeout::kCancelled)) {
      if (unprocessed != nullptr) {  // stop(): the job takes the task and the timer's reference
        node->place_ = Timeout::kRetired;
        count_out(1);
        unprocessed->push_back(TimerJob(node));
      } else {
        node->retire();
        count_out(1);
      }
    } else {
      node->place_ = Timeout::kDetached;  // a racing cancel() will queue it; retired below
    }
  };
  take_submissions();
  while (backlog_.head != nullptr) {
    Timeout* node = backlog_.head;
    backlog_.head = node->queue_next_;
    node->queue_next_ = nullptr;
    sweep(node);
  }
  layout_->drain(sweep);
  process_cancellations();
}

}  // namespace wheel::detail
