// SPDX-License-Identifier: Apache-2.0
// LoopWheel: the timing wheel without a thread, for any event loop to drive (libuv, Boost.Asio,
// a raw epoll loop), as tokio's wheel and folly's HHWheelTimer are driven by their runtimes.
//
// Model. The wheel never reads a clock: the caller owns time. It passes the present to
// advance(now), which runs every task whose deadline has passed, and asks next_due() when it
// should call again (its poll or sleep timeout). Times are std::chrono::nanoseconds since any
// origin the caller likes (steady_clock's epoch, a loop's start, 0 on a fake clock), the same
// origin in every call. The layouts are HashedWheelTimer's, the same code
// (timer/src/wheel_layout.h): kHashed (Netty's) or kHierarchical (Kafka's, levels aligned on
// absolute ticks). Tick t covers deadlines in [origin + t * tick, origin + (t + 1) * tick) and is
// processed once origin + (t + 1) * tick has passed, so a task never runs before its deadline and
// at most one tick after it (plus however late the caller advances).
//
// Handles (muduo's TimerId model). schedule_*() returns a Handle: a slot index and the slot's
// generation, 8 bytes, copyable, no reference count. cancel() finds the slot and checks the
// generation, so a stale handle (its timeout ran or was cancelled, the slot reused since) can
// never cancel another timeout. A handle does not keep anything alive; the wheel owns the task
// (stored inline in a 40-byte node plus the task) and destroys it once it has run or was
// cancelled.
//
// Expire first, then invoke (libuv's and the kernel's order). advance() takes the due timeouts
// of a tick out of the wheel onto a ready list, then runs them one by one. While it runs:
//   * cancel() of any timeout that has not started running succeeds and the task never runs,
//     whether it is still in the wheel or already on the ready list; a task's own handle no
//     longer cancels anything once the task has started (cancel() returns false).
//   * a timeout scheduled by a task goes into the wheel at once, on the tick of its deadline or
//     the tick after the one being run, whichever is later; it runs in this same advance() if
//     that tick has passed at `now`. So a task that reschedules itself with a deadline already
//     past runs once per tick, and one that uses schedule_after(0) (deadline `now`, whose tick
//     has not passed) runs once per advance(): neither can keep advance() from returning.
//   * advance() itself and the destructor must not be called from a task.
// A budget: advance(now, max_tasks) runs at most max_tasks tasks and keeps the rest on the ready
// list for the next call (next_due() then says "now"), so a driver can yield to I/O between
// slices of a burst of due timeouts (see wheel::net::LoopTimer).
//
// Threads: none of its own, and no synchronisation: one thread at a time uses a LoopWheel (the
// loop's). Schedule, cancel and advance execute no atomic read-modify-write, no fence and no
// lock (the node's state fields, shared with HashedWheelTimer's layout code, are written with
// relaxed stores, which compile to plain moves). Tasks run on the thread calling advance().
// Exceptions thrown by a task are caught and logged.
//
// Cost. Schedule and cancel are O(1); advance() is O(ticks with work + due + cascaded) and skips
// empty ticks; next_due() scans the bitmap of non-empty buckets (O(buckets / 64) at worst).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#include "wheel/detail/saturating.h"
#include "wheel/detail/task_timeout.h"
#include "wheel/timeout.h"
#include "wheel/timer_options.h"

namespace wheel {

namespace detail {
class WheelLayout;
}  // namespace detail

// The shape of a LoopWheel; validated by its constructor exactly as TimerOptions are by
// HashedWheelTimer's (tick raised to at least 1 ms, bucket count rounded up to a power of two).
struct LoopWheelOptions {
  // Resolution. REQUIRES > 0.
  std::chrono::nanoseconds tick_duration = std::chrono::milliseconds(1);
  // Buckets (per level for kHierarchical). REQUIRES 1 ..= 2^30 (2 ..= 2^30 for kHierarchical).
  std::size_t ticks_per_wheel = 512;
  TimerLayout layout = TimerLayout::kHashed;
  // schedule_*() throws RejectedExecutionError once this many are pending; <= 0: unlimited.
  std::int64_t max_pending_timeouts = 0;
};

class LoopWheel {
 public:
  using Time = std::chrono::nanoseconds;  // since the caller's origin

  // Names one scheduled timeout. Empty when default-constructed or reset().
  class Handle {
   public:
    Handle() noexcept = default;
    explicit operator bool() const noexcept { return generation_ != 0; }
    void reset() noexcept { *this = Handle(); }
    friend bool operator==(const Handle&, const Handle&) noexcept = default;

   private:
    friend class LoopWheel;
    Handle(std::uint32_t index, std::uint32_t generation) noexcept
        : index_(index), generation_(generation) {}
    std::uint32_t index_ = 0;
    std::uint32_t generation_ = 0;  // 0: empty; slots count from 1
  };

  // A wheel whose present is `now`. Throws std::invalid_argument for options as
  // HashedWheelTimer does (naming the option).
  explicit LoopWheel(LoopWheelOptions options = {}, Time now = Time::zero());
  // Destroys every task that has not run, unrun. REQUIRES: not called from a task.
  ~LoopWheel();
  LoopWheel(const LoopWheel&) = delete;
  LoopWheel& operator=(const LoopWheel&) = delete;

  // Schedules `task` (a callable, move-only allowed, invocable as task() or task(Handle) — the
  // latter receives the timeout's own handle) to run at the first advance() whose `now` has
  // passed the tick of `deadline`. A deadline at or before a tick already processed runs at the
  // next advance(). Returns its handle. Throws std::invalid_argument for an empty callable,
  // RejectedExecutionError at max_pending_timeouts (nothing changes then), std::bad_alloc.
  template <class F>
  requires std::is_invocable_v < std::decay_t<F>
  & > || std::is_invocable_v<std::decay_t<F>&, Handle> Handle schedule_at(F&& task, Time deadline) {
    using Task = std::decay_t<F>;
    if constexpr (std::is_pointer_v<Task> || std::is_member_pointer_v<Task> ||
                  requires(const Task& t) { t.operator bool(); }) {
      if (!static_cast<bool>(task)) throw std::invalid_argument("LoopWheel: task is empty");
    }
    const Handle handle = claim_slot();
    Node* node = nullptr;
    try {
      node = new TaskNode<Task>(std::forward<F>(task), handle.index_, handle.generation_);
    } catch (...) {
      free_slot(handle.index_);
      throw;
    }
    insert(node, deadline);
    return handle;
  }

  // schedule_at(task, now() + delay); `delay` is any duration, negative means "at once",
  // beyond nanoseconds::max() clamps. now() is the latest time the wheel was given: a driver
  // whose clock moved since should use schedule_at() with a fresh reading.
  template <class F, class Rep, class Period>
  Handle schedule_after(F&& task, std::chrono::duration<Rep, Period> delay) {
    return schedule_at(
        std::forward<F>(task),
        Time(detail::saturating_add(now_.count(), detail::saturating_nanoseconds(delay).count())));
  }

  // Cancels the timeout of `handle` if it has not started running: its task is destroyed now,
  // unrun. Returns true only when this call cancelled it; false for an empty or stale handle
  // (ran, running, cancelled).
  bool cancel(Handle handle) noexcept;

  // True while the timeout of `handle` is scheduled and has not started running.
  bool is_pending(Handle handle) const noexcept;

  // Moves the present to `now` (a `now` before the present changes nothing: time never goes
  // back) and runs, tick by tick (within a tick in no particular order), the tasks of every tick
  // that has fully passed, at most `max_tasks` of them; the rest wait on the ready list for the
  // next call. Returns how many ran. Throws std::logic_error when called from a task.
  std::size_t advance(Time now, std::size_t max_tasks = std::numeric_limits<std::size_t>::max());

  // When advance() has work next, so when a driver should wake: the end of the next tick with
  // work in the wheel (a due bucket, or a cascade or a round to check: so possibly before the
  // earliest deadline, never after it), now() when tasks wait on the ready list after a budget
  // cut, nullopt when nothing is pending. A driver sleeps until then, or until it schedules
  // something earlier.
  std::optional<Time> next_due() const;

  // Destroys every pending task unrun (a driver's close()). REQUIRES: not called from a task.
  void clear();

  // Timeouts scheduled that have neither started running nor been cancelled.
  std::size_t pending() const noexcept { return pending_; }
  // The latest time the wheel was given (constructor or advance()).
  Time now() const noexcept { return now_; }
  std::chrono::nanoseconds tick_duration() const noexcept { return tick_; }
  std::size_t ticks_per_wheel() const noexcept;

 private:
  // A wheel node (the layouts' Timeout) plus the slot that names it.
  class Node : public Timeout {
   protected:
    Node(std::uint16_t ops, std::uint32_t index, std::uint32_t generation)
        : Timeout(nullptr, ops), index_(index), generation_(generation) {}
    ~Node() = default;

    friend class LoopWheel;
    const std::uint32_t index_;
    const std::uint32_t generation_;
  };

  template <class F>
  class TaskNode final : public Node {
   public:
    template <class Arg>
    TaskNode(Arg&& task, std::uint32_t index, std::uint32_t generation)
        : Node(ops_index(), index, generation), task_(std::forward<Arg>(task)) {}
    static void* operator new(std::size_t size) { return detail::allocate_node_of<TaskNode>(size); }
    static void operator delete(void* p, std::size_t size) noexcept {
      detail::deallocate_node_of<TaskNode>(p, size);
    }

   private:
    static void invoke_fn(Timeout& timeout) {
      auto& self = static_cast<TaskNode&>(timeout);
      if constexpr (std::is_invocable_v<F&, Handle>) {
        self.task_.get()(Handle(self.index_, self.generation_));
      } else {
        self.task_.get()();
      }
    }
    static void destroy_task_fn(Timeout& timeout) noexcept {
      static_cast<TaskNode&>(timeout).task_.destroy();
    }
    static void destroy_node_fn(Timeout* timeout) noexcept {
      delete static_cast<TaskNode*>(timeout);
    }
    static std::uint16_t ops_index() {
      static constexpr detail::TaskOps kOps{&invoke_fn, &destroy_task_fn, &destroy_node_fn, false};
      static const std::uint16_t index = detail::register_task_ops(&kOps);
      return index;
    }
    [[no_unique_address]] detail::TaskStorage<F> task_;
  };

  struct Slot {
    Node* node = nullptr;  // null: free
    std::uint32_t generation = 0;
    std::uint32_t next_free = 0;
  };
  static constexpr std::uint32_t kNoSlot = 0xFFFFFFFF;

  Handle claim_slot();  // throws RejectedExecutionError, std::length_error, std::bad_alloc
  void free_slot(std::uint32_t index) noexcept;
  void insert(Node* node, Time deadline);
  std::uint64_t tick_of(Time t) const noexcept;  // the tick whose span holds `t` (0 before)
  std::size_t run_ready(std::size_t max_tasks);
  static void destroy(Node* node, bool task_alive) noexcept;
  // Ends `node` unrun: frees its slot (unless cancel() did) and destroys its task and itself.
  // REQUIRES: the node is out of the wheel or about to leave it.
  void discard(Node* node) noexcept;

  const std::chrono::nanoseconds tick_;
  const std::int64_t max_pending_;
  const Time origin_;
  Time now_;
  std::uint64_t cursor_ = 0;  // the next tick to process
  std::unique_ptr<detail::WheelLayout> layout_;
  std::vector<Slot> slots_;
  std::uint32_t free_head_ = kNoSlot;
  std::size_t pending_ = 0;
  // Due, not run yet (linked through queue_next_): one tick's due list, which advance() runs
  // before it collects the next, so it never needs a tail.
  Timeout* ready_head_ = nullptr;
  bool advancing_ = false;
};

}  // namespace wheel
