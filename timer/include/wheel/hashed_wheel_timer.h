// SPDX-License-Identifier: Apache-2.0
// HashedWheelTimer: a Netty-style hashed timing wheel for very many, mostly cancelled timeouts,
// with a hierarchical layout (Kafka's TimingWheel) for long delays at fine ticks.
//
// Algorithm. One worker thread advances the wheel every tick: it moves new timeouts from a
// lock-free submission queue into the wheel (at most 100,000 a tick), removes timeouts whose
// cancellation was queued, then expires what is due. Schedule and cancel are O(1) and never
// take a lock. A bucket is an array of 8-byte entries (node address and a small label), so
// walking one reads contiguous memory and touches a node only when it is due; cancellation
// removes an entry in O(1) (the bucket's last entry takes its place).
//
// Layouts (TimerOptions::layout), same API and contract:
//   * kHashed (default; Netty's): 2^k buckets; a timeout goes to bucket `due_tick & mask` and
//     waits its remaining rounds (whole turns of the wheel). A visit of a bucket reads all of
//     its entries (~ pending / ticks_per_wheel), but only in a round where something in it can
//     be due: each bucket keeps a lower bound on its first due round, and the worker sleeps
//     until the first visit that can expire something.
//   * kHierarchical (Kafka's TimingWheel, levels aligned on absolute ticks as in Linux and
//     tokio): levels of ticks_per_wheel buckets, a bucket of level k spanning one whole turn
//     of level k-1 (ticks_per_wheel^k ticks); overflow levels are created when a timeout first
//     needs one. A timeout starts on the level of the highest base-ticks_per_wheel digit in
//     which its due tick differs from the current one and cascades one or more levels down
//     when its bucket comes due, so it is moved at most once per level. Per-tick work is
//     O(due + cascaded), and the worker sleeps until the next non-empty level-0 bucket or the
//     next cascade. Requires ticks_per_wheel >= 2.
// Which to choose (measured worker CPU of both layouts and Netty's: docs/benchmarks.md).
// Both sleep while nothing is due. Choose kHierarchical for fine ticks with many timeouts
// expiring all the time and delays many turns long (idle connections, session expiry): a
// hashed visit then reads the whole bucket to find the few due entries. Choose kHashed (the
// default) when delays mostly fit in about one turn, or for Netty's exact structure. Schedule,
// cancel and memory cost the same in both.
//
// Memory. A pending timeout costs a 32-byte node plus its task (stored inline; nothing for a
// capture-less lambda) and an 8-byte entry: ~48 B with its handle. A wheel commits memory per
// bucket up front: kHashed 24 B * ticks_per_wheel (512 buckets = 12 KiB, 2^20 = 24 MiB,
// 2^26 = 1.5 GiB, 2^30 = 24 GiB); kHierarchical 16 B * ticks_per_wheel for level 0 and as
// much again for each level created later (at most ceil(64 / log2(ticks_per_wheel)) levels).
// A bucket holding anything also keeps at least one 512-byte chunk of entries.
//
// Timing. Ticks sit at absolute deadlines start + k * tick, so error does not accumulate. A task
// never runs before its full delay has passed (steady_clock) and is late by about one tick at
// most while the worker is not blocked, whichever level a timeout started on. A delay counts
// from a steady_clock reading that may be up to 4 us later than the call, never earlier: in a
// burst of new_timeout() calls a thread reuses its last reading while the CPU's cycle counter
// (x86-64 Linux with the kernel's "tsc" clocksource) says it is under 2 us old. Unlike Netty's,
// an idle wheel costs nothing: the worker sleeps until the next tick with work (kHashed: a
// bucket in which something can be due this round; kHierarchical: a due level-0 bucket or a
// cascade), and with nothing pending until new_timeout() wakes it.
//
// Threads. new_timeout(), new_periodic(), Timeout::cancel(), pending_timeouts(), is_stopped(),
// drain() and stop() are safe from any thread (drain() and stop() not from a task). Tasks run on
// the worker thread one after another, or, with TimerOptions::executor, wherever the executor runs
// them. A task may schedule and cancel. Expire first, then invoke: the worker first moves every due
// timeout of a bucket to a ready list, then runs them, so a task cancelling a neighbour cannot
// corrupt the walk.
//
// Periodic timeouts (new_periodic) run at a fixed rate on the same absolute tick grid, never
// overlap, and coalesce the periods they miss. Stopping: stop() stops at once and hands back the
// unrun tasks as TimerJobs; drain() first lets every pending timeout run; is_stopped() tells
// whether new timeouts are still accepted.
//
// Platform: 64-bit, with user-space addresses below 2^48 (x86-64, arm64 Linux); an entry
// packs the node address into 45 bits.
//
// Ownership: see timeout.h. Errors: misuse of the API throws (std::invalid_argument,
// std::logic_error, RejectedExecutionError); an exception thrown by a task is caught and logged.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "wheel/detail/saturating.h"
#include "wheel/detail/task_timeout.h"
#include "wheel/manual_clock.h"
#include "wheel/rejected_execution_error.h"
#include "wheel/timeout.h"
#include "wheel/timer_job.h"
#include "wheel/timer_options.h"

namespace wheel {

class HashedWheelTimer {
 public:
  // A timer with all default options.
  HashedWheelTimer();
  // Validates the options: tick_duration <= 0, ticks_per_wheel == 0 or > 2^30 (or 1 with
  // the hierarchical layout), tick_duration * ticks_per_wheel overflowing, or a layout that is
  // not a TimerLayout value throw std::invalid_argument naming the option.
  // The worker starts on start() or on the first new_timeout().
  explicit HashedWheelTimer(TimerOptions options);
  // A timer on a clock moved by hand (tests): it starts no worker thread; each
  // clock.advance() runs, on the calling thread, what is due by then. One thread drives the
  // clock and uses the timer; drain() throws std::logic_error. `clock` must outlive the timer.
  // See wheel/manual_clock.h. Throws as the constructor above.
  HashedWheelTimer(TimerOptions options, ManualClock& clock);
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

  // Schedules `task` to run periodically at fixed rate: first once `initial_delay` has passed,
  // then every `period` after that first deadline (deadlines start + initial_delay + k * period
  // on the timer's absolute clock, so runs never drift, however long the timeout lives). Each
  // run fires at the first tick after its deadline, as a one-shot timeout would, never before.
  // Returns a handle like new_timeout()'s: cancel() stops all future runs (a run already started
  // finishes); the timeout never ends expired, only cancelled (see timeout.h). It counts as one
  // pending timeout from now until it ends, including while a run is handed to the executor.
  //   * Runs never overlap: the next run is armed only when the previous one has returned,
  //     with or without an executor.
  //   * One run per period for any `period` >= the tick: a run returning during the tick after
  //     its deadline (as runs do) misses nothing.
  //   * Missed periods coalesce, they do not burst: when a run returns after the tick of a
  //     later deadline has ended (a slow run, a worker blocked by another task, a busy
  //     executor), those periods are skipped and the next run is at the first deadline whose
  //     tick has not ended. The run that was late happens once, as soon as it can.
  //   * `period` shorter than the tick: at most one run per tick.
  //   * With an executor, each run is a TimerJob; dropping it unrun (or the executor throwing)
  //     ends the periodic timeout, cancelled. A job still out when stop() runs is not among
  //     stop()'s jobs; when it returns, its timeout ends cancelled instead of re-arming.
  // `task` as for new_timeout() (invoked once per run). Throws std::invalid_argument for an
  // empty callable or `period` <= 0, and what new_timeout() throws. Starts the worker if needed.
  // Safe from any thread, tasks included.
  template <class F, class Rep1, class Period1, class Rep2, class Period2>
  requires detail::TimerTask<std::decay_t<F>> TimeoutHandle
  new_periodic(F&& task, std::chrono::duration<Rep1, Period1> initial_delay,
               std::chrono::duration<Rep2, Period2> period) {
    using Task = std::decay_t<F>;
    if constexpr (std::is_pointer_v<Task> || std::is_member_pointer_v<Task> ||
                  requires(const Task& t) { t.operator bool(); }) {
      if (!static_cast<bool>(task)) throw std::invalid_argument("new_periodic: task is empty");
    }
    const std::chrono::nanoseconds period_ns = detail::saturating_nanoseconds(period);
    if (period_ns <= std::chrono::nanoseconds::zero()) {
      throw std::invalid_argument("new_periodic: period must be greater than 0, got " +
                                  std::to_string(period_ns.count()) + "ns");
    }
    reserve_slot();
    Timeout* node = nullptr;
    try {
      node = new detail::TaskTimeout<Task, detail::PeriodicTimeout>(
          core_.get(), std::forward<F>(task), period_ns.count(), periodic_gate());
    } catch (...) {
      release_slot();
      throw;
    }
    return submit(node, detail::saturating_nanoseconds(initial_delay));
  }

  // Starts the worker thread if it is not running. Throws std::logic_error after stop().
  // Safe from any thread.
  void start();

  // Stops the worker: wakes and joins it (a task already running finishes first), then returns
  // a job for every timeout that had neither run nor been cancelled. Each of those timeouts is
  // now cancelled (is_cancelled() true, cancel() false); its job still holds the task: run it
  // (on the calling thread, once; a periodic task runs once and is not re-armed) or drop it
  // (the task is destroyed unrun). Ignoring the result drops them all, so nothing leaks. Handles
  // to these timeouts stay valid, as always; TimerJob::handle() gives one more.
  // Jobs already handed to the executor are not returned: the executor holds them.
  // From the moment stop() begins, is_stopped() is true and new_timeout() throws
  // std::logic_error. A second stop() and a stop() before any start return nothing.
  // Throws std::logic_error when called from a task on the worker thread.
  // Safe from any other thread.
  std::vector<TimerJob> stop();

  // A draining stop: from now on new_timeout() and new_periodic() throw std::logic_error,
  // except when called from a task of this timer (so a chain of tasks can finish its work);
  // blocks until every pending timeout has run or been cancelled, then stops as stop() does.
  //   * Periodic timeouts never finish by themselves: cancel them (before or during the drain,
  //     e.g. from another thread or from their own task) or drain() blocks.
  //   * With an executor, "run" means handed to the executor: drain() does not wait for the
  //     executor to run the jobs it holds (join your pool afterwards). A task that runs after
  //     drain() returned gets std::logic_error from new_timeout(), as after stop().
  //   * If stop() is called meanwhile (from another thread), drain() returns when it has.
  // is_stopped() stays false while draining, until the final stop begins. Returns at once on a
  // stopped or never-started timer (which is then stopped).
  // Returns what that final stop() returns: nothing, unless a task on an executor scheduled a
  // timeout between the end of the wait and the stop (its job is then returned, cancelled).
  // Throws std::logic_error when called from a task of this timer (it could never finish).
  // Safe from any other thread.
  std::vector<TimerJob> drain();

  // True once stop() (or the final step of drain()) has begun: new_timeout() and new_periodic()
  // throw std::logic_error from then on, and it never becomes false again. A task that
  // re-schedules itself may ask first, but stop() can still begin between the question and
  // new_timeout(): catch std::logic_error, or use new_periodic() for heartbeats.
  // Safe from any thread.
  bool is_stopped() const;

  // Timeouts scheduled that have neither run nor had their cancellation processed. Never
  // negative. Safe from any thread.
  std::size_t pending_timeouts() const;

  // The tick after validation (at least 1 ms).
  std::chrono::nanoseconds tick_duration() const;
  // The bucket count after rounding up to a power of two (per level in the hierarchical
  // layout).
  std::size_t ticks_per_wheel() const;

 private:
  HashedWheelTimer(TimerOptions options, ManualClock* clock);
  void reserve_slot();
  void release_slot() noexcept;
  TimeoutHandle submit(Timeout* node, std::chrono::nanoseconds delay);
  std::shared_ptr<detail::PeriodicGate> periodic_gate() const;

  std::unique_ptr<detail::TimerCore> core_;
};

}  // namespace wheel
