// SPDX-License-Identifier: Apache-2.0
// Internal. The state behind a HashedWheelTimer: the submission and cancellation queues, the
// wheel, and the worker thread that advances it. See hashed_wheel_timer.h for the contract.
// Its definitions are split by concern:
//   timer_core.cc        construction, new_timeout()'s and cancel()'s side, the clock readings
//   timer_lifecycle.cc   start(), stop(), drain() and collecting what a stopped timer holds
//   timer_worker.cc      the worker's loop: sleep, transfers, cancellations, running due tasks
//   periodic_timeouts.cc re-arming periodic timeouts, on the worker or from the executor
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "cancel_stack.h"
#include "intrusive_stack.h"
#include "periodic_deadline.h"
#include "periodic_gate.h"
#include "timeout_list.h"
#include "wheel/detail/task_timeout.h"
#include "wheel/manual_clock.h"
#include "wheel/timeout.h"
#include "wheel/timer_job.h"
#include "wheel/timer_options.h"
#include "wheel_layout.h"

namespace wheel {
class HashedWheelTimer;
}  // namespace wheel

namespace wheel::detail {

class TimerCore final : public ClockDriven {
 public:
  // Timeouts moved from the submission queue into the wheel per tick, at most (as Netty).
  static constexpr std::size_t kMaxTransfersPerTick = 100'000;
  // While cancellations keep coming, the worker looks for more this often instead of being
  // woken by each cancel().
  static constexpr std::chrono::milliseconds kCancelPoll{1};
  // The longest the worker sleeps while something is pending.
  static constexpr std::chrono::hours kMaxSleep{1};

  // REQUIRES: options validated and rounded by the caller. `manual`: the timer runs on that
  // clock, without a worker thread (see wheel/manual_clock.h); null: on steady_clock.
  TimerCore(HashedWheelTimer& owner, TimerOptions options, ManualClock* manual = nullptr);
  ~TimerCore();  // stops, then retires whatever raced with stop()

  HashedWheelTimer& owner() const { return owner_; }
  std::chrono::nanoseconds tick() const { return tick_; }
  std::size_t buckets() const { return layout_->buckets(); }
  std::size_t pending() const {
    const std::int64_t n = pending_.load(std::memory_order_acquire);
    return n > 0 ? static_cast<std::size_t>(n) : 0;
  }

  void start();
  std::vector<TimerJob> stop();
  std::vector<TimerJob> drain();
  bool is_stopped() const {
    return run_state_.load(std::memory_order_acquire) == RunState::kShutdown;
  }
  const std::shared_ptr<PeriodicGate>& periodic_gate() const { return gate_; }

  // new_timeout() in three steps: count the timeout in (starting the worker if needed),
  // allocate it, submit it. release_slot() undoes reserve_slot() when allocation fails.
  void reserve_slot();
  void release_slot() noexcept { count_out(1); }
  TimeoutHandle submit(Timeout* node, std::chrono::nanoseconds delay);

  // Timeout::cancel() after its state change: queues the timeout for the worker.
  void enqueue_cancel(Timeout* node);

  // Marks the calling thread as running a task of `core` for the lifetime of the guard.
  class TaskScope {
   public:
    explicit TaskScope(const TimerCore* core) noexcept;
    ~TaskScope();
    TaskScope(const TaskScope&) = delete;
    TaskScope& operator=(const TaskScope&) = delete;

   private:
    const TimerCore* saved_;
  };
  // True while the calling thread runs a task of this timer (worker, executor or stop()'s job).
  bool in_own_task() const noexcept;

  // Timers on a ManualClock (which has no worker thread): on the calling thread, what the
  // worker does each time it wakes, at the clock's present. ManualClock::advance() only.
  void run_worker_once() override;

 private:
  // x86-64 and arm64 lines (std::hardware_destructive_interference_size varies by flags).
  static constexpr std::size_t kCacheLine = 64;
  friend struct PeriodicGate;  // take_back_periodic()

  // kDraining: started, and new_timeout() is refused outside the timer's own tasks.
  enum class RunState { kInit, kStarted, kDraining, kShutdown };

  // Where the worker is: the next tick to process (tick t is due at start + (t + 1) * tick_),
  // and the cancellation stack's head when it last looked.
  struct WorkerPosition {
    std::uint64_t tick = 0;
    Timeout* cancel_head_seen = nullptr;
  };

  void worker_main();
  // The worker's work after each wake-up: idle cancellations, then every due tick.
  void process_due_ticks(WorkerPosition& at);
  // Sleeps until the deadline of `target_tick` (no target: indefinitely), or until a push of a
  // kind in `wake_for` (kWakeFor*) wakes it; with `poll`, kCancelPoll at most. False on
  // shutdown.
  bool sleep_until(std::optional<std::uint64_t> target_tick, std::uint8_t wake_for, bool poll);
  // `reason`: kWakeForSubmit or kWakeForCancel.
  void wake_if_sleeping(std::uint8_t reason);
  bool has_queued_work() const;
  void process_tick(std::uint64_t tick);
  void take_submissions();  // moves the submission stack onto the backlog
  void transfer_pending(std::uint64_t tick);
  // Retires every queued cancellation; returns how many there were.
  std::size_t process_cancellations();
  void run_ready(Timeout* ready);
  // A due periodic timeout on the worker: runs it unless cancelled, then re-arms or retires it.
  void run_periodic_here(Timeout* node);
  // A periodic timeout whose run has returned (state RUNNING): sets its next deadline on the
  // fixed-rate grid and arms it (INIT, place kInQueue); the caller queues it. False when
  // cancel() came first: the caller retires it.
  bool rearm_periodic(Timeout* node) noexcept;
  // Hands a due timeout to the executor.
  void hand_over(Timeout* node);
  // PeriodicGate::take_back under the gate's mutex, the timer alive: re-arms (true) or counts
  // the timeout out (false).
  bool take_back_periodic(Timeout* node, bool ran) noexcept;
  // stop() and the destructor: periodic jobs stop re-arming (see PeriodicGate).
  void close_gate();
  // Counts `n` timeouts out of pending_ and wakes drain() when that empties the timer.
  void count_out(std::int64_t n) noexcept {
    if (pending_.fetch_sub(n, std::memory_order_seq_cst) == n &&
        run_state_.load(std::memory_order_seq_cst) == RunState::kDraining) [[unlikely]] {
      notify_drained();
    }
  }
  void notify_drained() noexcept;  // wakes drain(); out of line, so count_out() stays small
  // After the worker is gone: cancels and collects whatever the timer still holds.
  void collect_remaining(std::vector<TimerJob>* unprocessed);
  std::int64_t elapsed_ns() const;
  // elapsed_ns() for a new timeout's deadline: cheaper, and up to CycleClock::kSlackNs late,
  // never early.
  std::int64_t stamp_ns() const;

  HashedWheelTimer& owner_;
  ManualClock* const manual_;
  const std::chrono::nanoseconds tick_;
  const std::int64_t max_pending_;
  const std::string thread_name_;
  const TimerExecutor executor_;
  const TickObserver tick_observer_;

  std::atomic<RunState> run_state_{RunState::kInit};
  std::mutex start_mutex_;  // serialises starting the worker with stop()
  std::chrono::steady_clock::time_point start_time_;
  std::thread worker_;
  std::atomic<std::thread::id> worker_id_{};

  std::atomic<std::int64_t> pending_{0};
  std::mutex drain_mutex_;  // drain() waits on drained_ for pending_ to reach 0
  std::condition_variable drained_;
  const std::shared_ptr<PeriodicGate> gate_ = std::make_shared<PeriodicGate>();
  IntrusiveStack<Timeout, MemberLink<Timeout, &Timeout::queue_next_>> submissions_;
  CancelStack cancellations_;

  // Sleep and wake-up: before sleeping, the worker says in sleeping_ which pushes should wake
  // it; the first producer that sees its reason there clears it and notifies.
  std::mutex sleep_mutex_;
  std::condition_variable wake_;
  static constexpr std::uint8_t kWakeForSubmit = 1;
  static constexpr std::uint8_t kWakeForCancel = 2;
  std::atomic<std::uint8_t> sleeping_{0};  // what may wake the sleeping worker; 0: nothing
  std::atomic<bool> shutdown_{false};

  // Worker-owned (and the stopping thread's once the worker has been joined). On a cache line
  // of their own: producers read sleeping_ and push onto the queues above at every
  // new_timeout(), and must not share a line with what the worker writes meanwhile.
  alignas(kCacheLine) const std::unique_ptr<WheelLayout> layout_;
  TimeoutList backlog_;               // submissions beyond the per-tick cap, oldest first
  std::int64_t manual_start_ns_ = 0;  // the manual clock's reading at start()
  WorkerPosition manual_position_;
};

}  // namespace wheel::detail
