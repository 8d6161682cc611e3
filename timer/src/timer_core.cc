#include "timer_core.h"

#include <pthread.h>

#include <cassert>
#include <exception>
#include <limits>
#include <stdexcept>

#include <spdlog/spdlog.h>

namespace wheel::detail {

namespace {

std::int64_t saturating_add(std::int64_t a, std::int64_t b) {
  std::int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) {
    return b > 0 ? std::numeric_limits<std::int64_t>::max()
                 : std::numeric_limits<std::int64_t>::min();
  }
  return sum;
}

}  // namespace

TimerCore::TimerCore(HashedWheelTimer& owner, TimerOptions options)
    : owner_(owner),
      tick_(options.tick_duration),
      max_pending_(options.max_pending_timeouts),
      thread_name_(std::move(options.thread_name)),
      executor_(std::move(options.executor)),
      wheel_(options.ticks_per_wheel) {}

TimerCore::~TimerCore() {
  try {
    stop();
  } catch (const std::exception& e) {  // destroyed from its own task: the worker cannot join itself
    spdlog::critical("wheel: {}; a timer must not be destroyed from its own task", e.what());
    std::terminate();
  }
  // A new_timeout() or cancel() that raced with stop() may have queued after it collected.
  collect_remaining(nullptr);
  assert(pending_.load() == 0);
}

void TimerCore::start() {
  // Checked before locking: a task calling start() while stop() joins its worker must not block.
  switch (run_state_.load(std::memory_order_acquire)) {
    case RunState::kStarted:
      return;
    case RunState::kShutdown:
      throw std::logic_error("HashedWheelTimer cannot be started once stopped");
    case RunState::kInit:
      break;
  }
  std::lock_guard lock(start_mutex_);
  switch (run_state_.load(std::memory_order_acquire)) {
    case RunState::kStarted:
      return;
    case RunState::kShutdown:
      throw std::logic_error("HashedWheelTimer cannot be started once stopped");
    case RunState::kInit:
      break;
  }
  start_time_ = std::chrono::steady_clock::now();
  worker_ = std::thread([this] { worker_main(); });
  run_state_.store(RunState::kStarted, std::memory_order_release);
}

std::vector<TimeoutHandle> TimerCore::stop() {
  if (std::this_thread::get_id() == worker_id_.load(std::memory_order_acquire)) {
    throw std::logic_error("HashedWheelTimer::stop() cannot be called from a timer task");
  }
  {
    std::lock_guard lock(start_mutex_);
    if (run_state_.exchange(RunState::kShutdown, std::memory_order_acq_rel) != RunState::kStarted) {
      return {};  // never started, or already stopped (or being stopped by another thread)
    }
  }
  {
    std::lock_guard sleep_lock(sleep_mutex_);
    shutdown_.store(true, std::memory_order_release);
  }
  wake_.notify_all();
  worker_.join();
  std::vector<TimeoutHandle> unprocessed;
  collect_remaining(&unprocessed);
  return unprocessed;
}

void TimerCore::reserve_slot() {
  if (run_state_.load(std::memory_order_acquire) != RunState::kStarted) {
    if (run_state_.load(std::memory_order_acquire) == RunState::kShutdown) {
      throw std::logic_error("new_timeout: the timer has been stopped");
    }
    start();
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
  node->deadline_or_rounds_ = saturating_add(elapsed_ns(), delay.count());
  submissions_.push(node);
  wake_if_sleeping();
  return TimeoutHandle(node, TimeoutHandle::Adopt{});
}

void TimerCore::enqueue_cancel(Timeout* node) {
  cancellations_.push(node);
  wake_if_sleeping();
}

void TimerCore::wake_if_sleeping() {
  // Pairs with the worker's store of sleeping_ and its re-check of the queues (both seq_cst):
  // either the worker sees our push, or we see it asleep. exchange() lets one producer notify.
  if (sleeping_.load(std::memory_order_seq_cst) && sleeping_.exchange(false)) {
    std::lock_guard lock(sleep_mutex_);
    wake_.notify_one();
  }
}

bool TimerCore::has_queued_work() const {
  return backlog_head_ != nullptr || !submissions_.empty() || !cancellations_.empty();
}

std::int64_t TimerCore::elapsed_ns() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                              start_time_)
      .count();
}

void TimerCore::worker_main() {
  worker_id_.store(std::this_thread::get_id(), std::memory_order_release);
  pthread_setname_np(pthread_self(), thread_name_.substr(0, 15).c_str());
  const std::int64_t tick_ns = tick_.count();
  // Thread ids are reused once a thread ends: forget ours so that no later thread looks like it.
  struct ForgetWorkerId {
    std::atomic<std::thread::id>* id;
    ~ForgetWorkerId() { id->store(std::thread::id(), std::memory_order_release); }
  } forget{&worker_id_};
  std::uint64_t tick = 0;  // the next tick to process; tick t is due at start + (t + 1) * tick_
  for (;;) {
    std::optional<std::uint64_t> target;
    if (has_queued_work()) {
      target = tick;
    } else if (auto distance = wheel_.ticks_to_next_nonempty(tick)) {
      target = tick + *distance;
    }
    if (!sleep_until(target, !target || *target > tick)) return;

    // Process every due tick, skipping those with an empty bucket and nothing queued: they
    // would change nothing. An empty wheel lets the count jump straight to now.
    std::uint64_t due_end = static_cast<std::uint64_t>(elapsed_ns() / tick_ns);
    while (tick < due_end && !shutdown_.load(std::memory_order_acquire)) {
      if (!has_queued_work()) {
        const auto distance = wheel_.ticks_to_next_nonempty(tick);
        if (!distance || tick + *distance >= due_end) {
          tick = due_end;
          break;
        }
        tick += *distance;
      }
      process_tick(tick);
      ++tick;
      due_end = static_cast<std::uint64_t>(elapsed_ns() / tick_ns);
    }
  }
}

bool TimerCore::sleep_until(std::optional<std::uint64_t> target_tick, bool deep) {
  std::unique_lock lock(sleep_mutex_);
  if (shutdown_.load(std::memory_order_acquire)) return false;
  if (deep) {
    sleeping_.store(true, std::memory_order_seq_cst);
    if (has_queued_work()) {
      sleeping_.store(false, std::memory_order_relaxed);
      return true;
    }
  }
  const auto woken = [&] {
    return shutdown_.load(std::memory_order_acquire) ||
           (deep && !sleeping_.load(std::memory_order_acquire));
  };
  if (target_tick) {
    const auto deadline = start_time_ + tick_ * static_cast<std::int64_t>(*target_tick + 1);
    wake_.wait_until(lock, deadline, woken);
  } else {
    wake_.wait(lock, woken);
  }
  sleeping_.store(false, std::memory_order_relaxed);
  return !shutdown_.load(std::memory_order_acquire);
}

void TimerCore::process_tick(std::uint64_t tick) {
  transfer_pending(tick);
  process_cancellations();
  run_ready(wheel_.collect_due(tick));
}

void TimerCore::take_submissions() {
  Link* newest = nullptr;
  if (Link* oldest = submissions_.take_all_oldest_first(&newest)) {
    (backlog_tail_ != nullptr ? backlog_tail_->next : backlog_head_) = oldest;
    backlog_tail_ = newest;
  }
}

void TimerCore::transfer_pending(std::uint64_t tick) {
  take_submissions();
  const std::int64_t tick_ns = tick_.count();
  const auto wheel_len = static_cast<std::uint64_t>(wheel_.buckets());
  for (std::size_t moved = 0; backlog_head_ != nullptr && moved < kMaxTransfersPerTick; ++moved) {
    Timeout* node = TimerCore::as_timeout(backlog_head_);
    backlog_head_ = backlog_head_->next;
    if (backlog_head_ == nullptr) backlog_tail_ = nullptr;
    node->next = nullptr;

    if (node->state_.load(std::memory_order_acquire) == Timeout::kCancelled) {
      if (node->place_ == Timeout::kCancelSeenInQueue) {
        node->place_ = Timeout::kRetired;
        node->release();
      } else {
        node->place_ = Timeout::kDetached;  // its cancellation will retire it
      }
      continue;
    }
    const std::int64_t deadline = node->deadline_or_rounds_;
    const std::uint64_t deadline_tick =
        deadline <= 0 ? 0 : static_cast<std::uint64_t>(deadline / tick_ns);
    // A deadline already past lands on the current tick.
    const std::uint64_t slot_tick = deadline_tick > tick ? deadline_tick : tick;
    node->deadline_or_rounds_ = static_cast<std::int64_t>((slot_tick - tick) / wheel_len);
    node->place_ = Timeout::kInWheel;
    wheel_.insert(node, slot_tick);
  }
}

void TimerCore::process_cancellations() {
  Timeout* newest = nullptr;
  Timeout* node = cancellations_.take_all_oldest_first(&newest);
  while (node != nullptr) {
    Timeout* next = node->cancel_next_;
    node->cancel_next_ = nullptr;
    switch (node->place_) {
      case Timeout::kInWheel:
        wheel_.unlink(node);
        retire_cancelled(node);
        break;
      case Timeout::kDetached:
        retire_cancelled(node);
        break;
      case Timeout::kInQueue:
        // Still in the submission backlog: finish all but the reference now; the transfer
        // drops that when it meets the node.
        node->destroy_task();
        node->task_alive_ = false;
        node->place_ = Timeout::kCancelSeenInQueue;
        pending_.fetch_sub(1, std::memory_order_release);
        break;
      default:
        assert(false && "cancellation queued twice");
    }
    node = next;
  }
}

void TimerCore::retire_cancelled(Timeout* node) {
  node->destroy_task();
  node->task_alive_ = false;
  node->place_ = Timeout::kRetired;
  pending_.fetch_sub(1, std::memory_order_release);
  node->release();
}

void TimerCore::run_ready(Timeout* ready) {
  while (ready != nullptr) {
    Timeout* node = ready;
    ready = TimerCore::as_timeout(node->next);
    node->next = nullptr;
    node->place_ = Timeout::kRetired;
    if (executor_) {
      pending_.fetch_sub(1, std::memory_order_release);
      try {
        executor_(TimerJob(node));
      } catch (const std::exception& e) {
        spdlog::error("wheel: the timer executor threw, task dropped: {}", e.what());
      } catch (...) {
        spdlog::error("wheel: the timer executor threw, task dropped");
      }
    } else {
      node->invoke_guarded();
      node->destroy_task();
      node->task_alive_ = false;
      pending_.fetch_sub(1, std::memory_order_release);
      node->release();
    }
  }
}

void TimerCore::run_and_release(Timeout* node) noexcept {
  node->invoke_guarded();
  discard_and_release(node);
}

void TimerCore::discard_and_release(Timeout* node) noexcept {
  if (node->task_alive_) {
    node->destroy_task();
    node->task_alive_ = false;
  }
  node->release();
}

void TimerCore::collect_remaining(std::vector<TimeoutHandle>* unprocessed) {
  // Cancellations first, so that the sweep below only meets timeouts nobody cancelled yet.
  process_cancellations();
  const auto sweep = [&](Timeout* node) {
    if (node->place_ == Timeout::kCancelSeenInQueue) {  // cancellation done, reference left
      node->place_ = Timeout::kRetired;
      node->release();
    } else if (node->try_transition(Timeout::kCancelled)) {
      if (unprocessed != nullptr) {
        node->add_ref();
        unprocessed->push_back(TimeoutHandle(node, TimeoutHandle::Adopt{}));
      }
      retire_cancelled(node);
    } else {
      node->place_ = Timeout::kDetached;  // a racing cancel() will queue it; retired below
    }
  };
  take_submissions();
  while (backlog_head_ != nullptr) {
    Timeout* node = TimerCore::as_timeout(backlog_head_);
    backlog_head_ = backlog_head_->next;
    node->next = nullptr;
    sweep(node);
  }
  backlog_tail_ = nullptr;
  wheel_.drain(sweep);
  process_cancellations();
}

}  // namespace wheel::detail
