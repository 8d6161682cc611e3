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
//     waits its remaining rounds (whole turns of the wheel). Each tick visits one bucket and
//     reads all of its entries: per-tick work ~ pending / ticks_per_wheel entry reads, and the
//     worker wakes for every tick whose bucket holds anything.
//   * kHierarchical (Kafka's TimingWheel, levels aligned on absolute ticks as in Linux and
//     tokio): levels of ticks_per_wheel buckets, a bucket of level k spanning one whole turn
//     of level k-1 (ticks_per_wheel^k ticks); overflow levels are created when a timeout first
//     needs one. A timeout starts on the level of the highest base-ticks_per_wheel digit in
//     which its due tick differs from the current one and cascades one or more levels down
//     when its bucket comes due, so it is moved at most once per level. Per-tick work is
//     O(due + cascaded), and the worker sleeps until the next non-empty level-0 bucket or the
//     next cascade. Requires ticks_per_wheel >= 2.
// Which to choose (measured on a 2-core VM, 10^6 pending timeouts of 1 min to 24 h, worker CPU
// per second of wall time; Netty 4.1 in the same session: 132 ms/s at tick 1 ms, 35 at 10 ms):
// hashed 48 and 5 ms/s, hierarchical 0 and 0 (nothing due, nothing cascading). With 20,000
// timeouts of 30 s to 2 min at tick 1 ms: hashed ~19 ms/s (it wakes nearly every tick),
// hierarchical 0. Choose kHierarchical for fine ticks with delays many turns long (idle
// connections, session expiry, retries in minutes); kHashed when most timeouts end within
// about one turn, or for Netty's exact behaviour. Schedule and cancel cost the same in both.
//
// Memory. A pending timeout costs a 40-byte node plus its task (stored inline; nothing for a
// capture-less lambda) and an 8-byte entry: ~56 B with its handle. A wheel commits 16 B per
// bucket up front (kHashed: 16 B * ticks_per_wheel; 512 buckets = 8 KiB, 2^20 = 16 MiB,
// 2^26 = 1 GiB, 2^30 = 16 GiB), and a bucket holding anything keeps at least one 512-byte
// chunk of entries. kHierarchical commits 16 B *
// ticks_per_wheel for level 0 and as much again for each level created later (at most
// ceil(64 / log2(ticks_per_wheel)) levels).
//
// Timing. Ticks sit at absolute deadlines start + k * tick, so error does not accumulate. A task
// never runs before its full delay has passed (steady_clock) and is late by about one tick at
// most while the worker is not blocked, whichever level a timeout started on. Unlike Netty's,
// an idle wheel costs nothing: the worker sleeps until the next tick with work (kHashed: a
// bucket holding something; kHierarchical: a due level-0 bucket or a cascade), and with
// nothing pending until new_timeout() wakes it.
//
// Threads. new_timeout(), Timeout::cancel(), pending_timeouts() and stop() are safe from any
// thread (stop() not from a task). Tasks run on the worker thread one after another, or, with
// TimerOptions::executor, wherever the executor runs them. A task may schedule and cancel.
// Expire first, then invoke: the worker first moves every due timeout of a bucket to a ready
// list, then runs them, so a task cancelling a neighbour cannot corrupt the walk.
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
  // Validates the options: tick_duration <= 0, ticks_per_wheel == 0 or > 2^30 (or 1 with
  // the hierarchical layout), tick_duration * ticks_per_wheel overflowing, or a layout that is
  // not a TimerLayout value throw std::invalid_argument naming the option.
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
  // The bucket count after rounding up to a power of two (per level in the hierarchical
  // layout).
  std::size_t ticks_per_wheel() const;

 private:
  void reserve_slot();
  void release_slot() noexcept;
  TimeoutHandle submit(Timeout* node, std::chrono::nanoseconds delay);

  std::unique_ptr<detail::TimerCore> core_;
};

}  // namespace wheel
