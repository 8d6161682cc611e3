// SPDX-License-Identifier: Apache-2.0
#include "timer_core.h"

#include <pthread.h>
#include <sys/prctl.h>

#include <algorithm>
#include <cassert>
#include <exception>
#include <limits>
#include <stdexcept>

#include <spdlog/spdlog.h>

#include "wheel/logger.h"
#include "wheel/manual_clock.h"

#include "cycle_clock.h"
#include "hierarchical_wheel.h"
#include "timer_wheel.h"
#include "wheel/detail/saturating.h"
#include "wheel/rejected_execution_error.h"

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
      wheel_(make_wheel(options.layout, options.ticks_per_wheel, false)) {
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

void TimerCore::start() {
  // Checked before locking: a task calling start() while stop() joins its worker must not block.
  switch (run_state_.load(std::memory_order_acquire)) {
    case RunState::kStarted:
    case RunState::kDraining:
      return;
    case RunState::kShutdown:
      throw std::logic_error("HashedWheelTimer cannot be started once stopped");
    case RunState::kInit:
      break;
  }
  std::lock_guard lock(start_mutex_);
  switch (run_state_.load(std::memory_order_acquire)) {
    case RunState::kStarted:
    case RunState::kDraining:
      return;
    case RunState::kShutdown:
      throw std::logic_error("HashedWheelTimer cannot be started once stopped");
    case RunState::kInit:
      break;
  }
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

void TimerCore::close_gate() {
  std::lock_guard lock(gate_->mutex);
  if (gate_->core == nullptr) return;
  gate_->core = nullptr;
  // Periodic jobs still at the executor leave the count now; they retire by themselves.
  if (gate_->out > 0) count_out(std::exchange(gate_->out, 0));
}

void TimerCore::count_out(std::int64_t n) noexcept {
  if (pending_.fetch_sub(n, std::memory_order_seq_cst) == n &&
      run_state_.load(std::memory_order_seq_cst) == RunState::kDraining) {
    std::lock_guard lock(drain_mutex_);
    drained_.notify_all();
  }
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

bool TimerCore::has_queued_work() const {
  return backlog_head_ != nullptr || !submissions_.empty() || !cancellations_.empty();
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
    } else if (auto distance = wheel_->ticks_to_next_event(tick)) {
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
    if (!has_queued_work()) {
      const auto distance = wheel_->ticks_to_next_event(tick);
      if (!distance || tick + *distance >= due_end) {
        tick = due_end;
        break;
      }
      tick += *distance;
    }
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
    const bool submitted = backlog_head_ != nullptr || !submissions_.empty();
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
  run_ready(wheel_->collect_due(tick));
}

void TimerCore::take_submissions() {
  Timeout* newest = nullptr;
  if (Timeout* oldest = submissions_.take_all_oldest_first(&newest)) {
    (backlog_tail_ != nullptr ? backlog_tail_->queue_next_ : backlog_head_) = oldest;
    backlog_tail_ = newest;
  }
}

void TimerCore::transfer_pending(std::uint64_t tick) {
  take_submissions();
  const std::int64_t tick_ns = tick_.count();
  // The walk keeps the backlog's head in a local and stores it once at the end.
  Timeout* head = backlog_head_;
  for (std::size_t moved = 0; head != nullptr && moved < kMaxTransfersPerTick; ++moved) {
    Timeout* node = head;
    head = head->queue_next_;
    node->queue_next_ = nullptr;

    // Negative once cancel() has put its link there (the state is CANCELLED then).
    const std::int64_t deadline = node->deadline();
    if (deadline < 0 || node->state_.load(std::memory_order_acquire) == Timeout::kCancelled) {
      if (node->place_ == Timeout::kCancelSeenInQueue) {
        node->place_ = Timeout::kRetired;
        node->release();
      } else {
        node->place_ = Timeout::kDetached;  // its cancellation will retire it
      }
      continue;
    }
    // Tick t is processed once start + (t + 1) * tick has passed: the first tick boundary at or
    // after the deadline. A deadline already past lands on the current tick.
    const std::uint64_t due = deadline <= 0 ? 0 : static_cast<std::uint64_t>(deadline / tick_ns);
    node->place_ = Timeout::kInWheel;
    wheel_->insert(node, due, tick);
  }
  backlog_head_ = head;
  if (head == nullptr) backlog_tail_ = nullptr;
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
        if (group[i]->place_ == Timeout::kInWheel) wheel_->prefetch_unlink(group[i], phase);
      }
    }
    for (std::size_t i = 0; i < size; ++i) {
      Timeout* t = group[i];
      switch (t->place_) {
        case Timeout::kInWheel:
          wheel_->unlink(t);
          finish_cancelled(t);
          ++retired;
          break;
        case Timeout::kDetached:
          finish_cancelled(t);
          ++retired;
          break;
        case Timeout::kInQueue:
          // Still in the submission backlog: finish all but the reference now; the transfer
          // drops that when it meets the node.
          t->destroy_task();
          t->task_alive_ = false;
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

void TimerCore::finish_cancelled(Timeout* node) {
  node->destroy_task();
  node->task_alive_ = false;
  node->place_ = Timeout::kRetired;
  node->release();
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
      node->place_ = Timeout::kRetired;
      node->invoke_guarded();
      node->destroy_task();
      node->task_alive_ = false;
      count_out(1);
      node->release();
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

void TimerCore::run_periodic_here(Timeout* node) {
  auto* periodic = static_cast<PeriodicTimeout*>(node);
  // Claiming the run fails only when cancel() came first: then no run starts.
  if (node->try_transition(Timeout::kRunning, Timeout::kExpired)) {
    node->invoke_guarded();
    // Armed only now that the run has returned, so runs never overlap. The node goes round
    // the backlog, as a new timeout would, whatever the wheel's layout.
    periodic->deadline_ns_ =
        next_periodic_deadline(periodic->deadline_ns_, periodic->period_ns_, elapsed_ns());
    // RUNNING: no cancel() can put its link here now.
    node->deadline_or_link_.store(std::max<std::int64_t>(periodic->deadline_ns_, 0),
                                  std::memory_order_relaxed);
    node->place_ = Timeout::kInQueue;
    if (node->try_transition(Timeout::kInit, Timeout::kRunning)) {
      (backlog_tail_ != nullptr ? backlog_tail_->queue_next_ : backlog_head_) = node;
      backlog_tail_ = node;
      return;
    }
  }
  // Cancelled before its run started or while it ran: it ends here.
  node->place_ = Timeout::kRetired;
  node->destroy_task();
  node->task_alive_ = false;
  count_out(1);
  node->release();
}

bool PeriodicGate::take_back(Timeout* node, bool ran) {
  std::lock_guard lock(mutex);
  return core != nullptr && core->take_back_periodic(node, ran);
}

bool TimerCore::take_back_periodic(Timeout* node, bool ran) noexcept {
  auto* periodic = static_cast<PeriodicTimeout*>(node);
  --gate_->out;
  if (ran) {
    periodic->deadline_ns_ =
        next_periodic_deadline(periodic->deadline_ns_, periodic->period_ns_, elapsed_ns());
    // RUNNING: no cancel() can put its link here now.
    node->deadline_or_link_.store(std::max<std::int64_t>(periodic->deadline_ns_, 0),
                                  std::memory_order_relaxed);
    node->place_ = Timeout::kInQueue;
    if (node->try_transition(Timeout::kInit, Timeout::kRunning)) {
      submissions_.push(node);
      wake_if_sleeping(kWakeForSubmit);
      return true;
    }
  }
  count_out(1);
  return false;
}

void TimerCore::collect_remaining(std::vector<TimerJob>* unprocessed) {
  // Cancellations first, so that the sweep below only meets timeouts nobody cancelled yet.
  process_cancellations();
  const auto sweep = [&](Timeout* node) {
    if (node->place_ == Timeout::kCancelSeenInQueue) {  // cancellation done, reference left
      node->place_ = Timeout::kRetired;
      node->release();
    } else if (node->try_transition(Timeout::kCancelled)) {
      if (unprocessed != nullptr) {  // stop(): the job takes the task and the timer's reference
        node->place_ = Timeout::kRetired;
        count_out(1);
        unprocessed->push_back(TimerJob(node));
      } else {
        finish_cancelled(node);
        count_out(1);
      }
    } else {
      node->place_ = Timeout::kDetached;  // a racing cancel() will queue it; retired below
    }
  };
  take_submissions();
  while (backlog_head_ != nullptr) {
    Timeout* node = backlog_head_;
    backlog_head_ = backlog_head_->queue_next_;
    node->queue_next_ = nullptr;
    sweep(node);
  }
  backlog_tail_ = nullptr;
  wheel_->drain(sweep);
  process_cancellations();
}

}  // namespace wheel::detail
