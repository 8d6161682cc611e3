// SPDX-License-Identifier: Apache-2.0
// LoopTimer: a timing wheel driven by one libuv loop, without a thread of its own (folly's
// HHWheelTimer model): a wheel::LoopWheel plus one uv_timer_t that sleeps until the wheel's
// next due tick. Tasks run on the loop thread, so they may touch the loop's handles freely.
//
// On the loop thread, new_timeout() and cancel() touch no atomic and no lock: they insert into
// and unlink from the wheel directly; the uv timer is re-armed only when a new timeout is due
// before the one it sleeps for. With nothing pending the uv timer is stopped: no wake-ups.
//
// Other threads schedule with post_timeout() and cancel with cancel_posted(): the request goes
// through a mutex-protected queue and one uv_async_send wake-up; the loop applies it on its
// next turn. The deadline is taken on the posting thread.
//
// Expiry budget: one loop turn runs at most LoopTimerOptions::max_tasks_per_turn due tasks; the
// rest run on the following turns, each after the loop has polled for I/O (a zero-timeout uv
// timer), so a burst of a million due timeouts does not stall the loop's I/O.
//
// Closing: close() destroys every task that has not run (pending, due but over the budget,
// posted and not yet applied) on the loop thread without running it, and closes the two libuv
// handles; they finish closing on the loop's next turn, which frees them: the LoopTimer itself
// may be destroyed right after close(). Until close() the async handle keeps the loop alive, as
// any open libuv handle does: a program that forgets close() never leaves uv_run(). No task runs
// after close(); posting after close() drops the task (destroyed on the posting thread).
//
// On a ManualClock (the second constructor; for tests): the timer reads that clock instead of
// the steady clock and never arms its uv timer; each ManualClock::advance() runs a turn on the
// calling thread, which must be the loop's (tasks over the budget still wait for the loop's
// next turns, uv_run). now_ms() is the clock's reading, so an IdleDetector on the timer runs on
// it too. Everything, post_timeout() included, is then loop thread only.
//
// Threads: everything is loop thread only (or, before the loop runs, the thread that constructed
// the timer) except post_timeout() and cancel_posted(), which are safe from any thread while
// the LoopTimer exists. As in libuv, the loop-only rule is the caller's to keep: nothing can
// tell the thread that will run the loop before it runs.
#pragma once

#include <uv.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include "wheel/detail/saturating.h"
#include "wheel/loop_wheel.h"
#include "wheel/manual_clock.h"
#include "wheel/net/detail/posted_task.h"
#include "wheel/timer_options.h"

namespace wheel::net {

class LoopInbox;

// What a LoopTimer adds to the wheel's options.
// What runs around the due tasks of each turn, on the loop thread: `before` just before the
// wheel advances, `after` just after (tasks that throw are caught and logged by the wheel, so
// `after` always follows). A TcpServer uses them to write each connection's output of a turn in
// one send(2). Either may be empty.
struct LoopTimerTurnHooks {
  std::function<void()> before;
  std::function<void()> after;
};

struct LoopTimerOptions {
  // Due tasks run per loop turn, at most; the rest wait for the next turns, each after the loop
  // has polled for I/O. >= 1.
  std::size_t max_tasks_per_turn = 1024;
};

class LoopTimer : private wheel::detail::ClockDriven {
 public:
  using Handle = LoopWheel::Handle;

  // What post_timeout() returns: names the timeout for cancel_posted(). 0: none.
  struct PostedTimeout {
    std::uint64_t id = 0;
    explicit operator bool() const noexcept { return id != 0; }
  };

  using Options = LoopTimerOptions;

  // A timer on `loop`. From `options` it uses tick_duration, ticks_per_wheel, layout,
  // max_pending_timeouts and tick_observer (called on the loop thread at each wake-up that
  // finds work due, with how late the wake-up came after the tick it slept for ended);
  // thread_name and executor mean nothing without a thread and are ignored. Throws
  // std::invalid_argument for options the wheel rejects or max_tasks_per_turn 0, std::system_error
  // when a libuv handle cannot be created. Loop thread only (or before the loop runs).
  LoopTimer(uv_loop_t* loop, TimerOptions options = {}, LoopTimerOptions loop_options = {});
  // The same on `clock` (see the top of this file), which must outlive the timer or its
  // close(). Loop thread only.
  LoopTimer(uv_loop_t* loop, ManualClock& clock, TimerOptions options = {},
            LoopTimerOptions loop_options = {});
  // Closes the timer if close() was not called. Loop thread only.
  ~LoopTimer();

  LoopTimer(const LoopTimer&) = delete;
  LoopTimer& operator=(const LoopTimer&) = delete;

  // Schedules `task` (invocable as task() or task(Handle), Handle being its own) to run on the
  // loop once `delay` has passed (never before; within about one tick after, plus however long
  // the loop is busy). Returns its handle. Throws std::logic_error after close(), and what
  // LoopWheel::schedule_at throws. Loop thread only (tasks included).
  template <class F, class Rep, class Period>
  Handle new_timeout(F&& task, std::chrono::duration<Rep, Period> delay) {
    check_open("new_timeout");
    const LoopWheel::Time deadline(wheel::detail::saturating_add(
        now().count(), wheel::detail::saturating_nanoseconds(delay).count()));
    Handle handle = wheel_.schedule_at(std::forward<F>(task), deadline);
    ++scheduled_;
    if (!in_turn_ && (!armed_for_ || deadline < *armed_for_)) arm();
    return handle;
  }

  // Cancels the timeout of `handle` if its task has not started: the task is destroyed now,
  // unrun. Returns true only when this call cancelled it; false for an empty or stale handle.
  // Counts the call. Loop thread only.
  bool cancel(Handle handle) noexcept {
    ++cancels_;
    return wheel_.cancel(handle);
  }

  // Schedules `task` (invocable as task()) from any thread: its deadline is now + `delay` on
  // this thread's clock; the loop inserts it on its next turn. Returns its id for
  // cancel_posted(), or an empty id when the timer is closed (the task is then destroyed
  // here, unrun). Throws std::bad_alloc, std::invalid_argument for an empty callable.
  // Safe from any thread.
  template <class F, class Rep, class Period>
  PostedTimeout post_timeout(F&& task, std::chrono::duration<Rep, Period> delay) {
    using Task = std::decay_t<F>;
    static_assert(std::is_invocable_v<Task&>, "post_timeout: the task must be invocable as task()");
    if constexpr (std::is_pointer_v<Task> || requires(const Task& t) { t.operator bool(); }) {
      if (!static_cast<bool>(task)) throw std::invalid_argument("post_timeout: task is empty");
    }
    struct Erased final : detail::PostedTask {
      explicit Erased(F&& f) : task(std::forward<F>(f)) {}
      void run() override { task(); }
      Task task;
    };
    const LoopWheel::Time deadline(wheel::detail::saturating_add(
        now().count(), wheel::detail::saturating_nanoseconds(delay).count()));
    return post(std::make_unique<Erased>(std::forward<F>(task)), deadline);
  }

  // Cancels a posted timeout: its task does not start once the loop has applied the
  // cancellation, which it does on its next turn, in the order of the requests (a task due
  // before that may still run). Nothing happens for an id that ran, was cancelled or is empty.
  // Safe from any thread.
  void cancel_posted(PostedTimeout timeout);

  // Replaces the hooks run around each turn's tasks (LoopTimerTurnHooks). Loop thread only, not
  // from a task.
  void set_turn_hooks(LoopTimerTurnHooks hooks) { turn_hooks_ = std::move(hooks); }

  // Stops the timer and closes its handles (see the top of this file). Idempotent.
  // REQUIRES: not called from one of this timer's tasks. Loop thread only.
  void close();

  uv_loop_t* loop() const { return loop_; }
  // The present in ms, for IdleWatch::record_*(): the loop's cached time (uv_now); on a
  // ManualClock, the clock's reading. Loop thread only.
  std::uint64_t now_ms() const {
    return manual_ == nullptr ? uv_now(loop_) : static_cast<std::uint64_t>(manual_->now() / kMs);
  }
  // now_ms() after refreshing the loop's cached time (uv_update_time), for a callback that may
  // run late in a long pass of the loop. Loop thread only.
  std::uint64_t fresh_now_ms() {
    if (manual_ == nullptr) uv_update_time(loop_);
    return now_ms();
  }
  // The clock new_timeout() measures delays from: the steady clock at full resolution, or the
  // ManualClock's reading (nanoseconds since its origin). Loop thread only.
  std::chrono::nanoseconds clock_now() const { return now(); }
  // Timeouts neither run nor cancelled (posted ones once the loop has taken them in).
  // Loop thread only.
  std::size_t pending_timeouts() const { return wheel_.pending(); }
  // How many new_timeout() and cancel() calls this timer has seen. Loop thread only.
  std::uint64_t timeouts_scheduled() const { return scheduled_; }
  std::uint64_t cancel_calls() const { return cancels_; }
  // Loop turns that stopped at max_tasks_per_turn with due tasks left. Loop thread only.
  std::uint64_t budget_cuts() const { return budget_cuts_; }
  // The tick and bucket count after validation.
  std::chrono::nanoseconds tick_duration() const { return wheel_.tick_duration(); }
  std::size_t ticks_per_wheel() const { return wheel_.ticks_per_wheel(); }

 private:
  static constexpr std::chrono::milliseconds kMs{1};
  LoopTimer(uv_loop_t* loop, ManualClock* clock, TimerOptions options,
            LoopTimerOptions loop_options);
  LoopWheel::Time now() const;                 // steady_clock, or the manual clock
  void run_worker_once() override { turn(); }  // ManualClock::advance()
  void check_open(const char* what) const;
  PostedTimeout post(std::unique_ptr<detail::PostedTask> task, LoopWheel::Time deadline);
  // Runs a turn: applies posted requests, advances the wheel within the budget, re-arms.
  void turn();
  // Points the uv timer at the wheel's next due time (stops it when nothing is pending).
  void arm();
  // The loop thread's side of the inbox: schedule or cancel what other threads posted.
  void take_posted(std::uint64_t id, std::unique_ptr<detail::PostedTask> task,
                   LoopWheel::Time deadline);

  uv_loop_t* loop_;
  ManualClock* const manual_;  // null: the steady clock
  const std::size_t max_tasks_per_turn_;
  const TickObserver tick_observer_;
  LoopTimerTurnHooks turn_hooks_;
  LoopWheel wheel_;
  LoopInbox* inbox_;                          // frees itself once its handles have closed
  std::optional<LoopWheel::Time> armed_for_;  // when the uv timer fires; nullopt: stopped
  bool in_turn_ = false;
  bool closed_ = false;
  std::uint64_t scheduled_ = 0;
  std::uint64_t cancels_ = 0;
  std::uint64_t budget_cuts_ = 0;
  std::atomic<std::uint64_t> next_posted_id_{1};      // post_timeout() only
  std::unordered_map<std::uint64_t, Handle> posted_;  // posted ids taken in, not run yet
};

}  // namespace wheel::net
