// SPDX-License-Identifier: Apache-2.0
// A Timeout is one scheduled task of a HashedWheelTimer; a TimeoutHandle is the caller's
// reference-counted pointer to it.
//
// Ownership model
//   * A Timeout is an intrusive node: the task, the wheel links and the reference count live in
//     one allocation. `new_timeout()` allocates it and returns the first TimeoutHandle.
//   * The node is owned jointly by every TimeoutHandle and, while the timeout is pending, by its
//     timer. Memory is freed when the last of them lets go, so a handle may outlive its timer.
//   * The task (and everything it captured) is owned by the timer alone. It is destroyed as soon
//     as the timeout has run, its cancellation has been processed, or the timer stopped, even
//     while handles remain: a connection that stores its own handle forms no cycle through it.
//
// States: INIT -> EXPIRED (the task was handed to run) or INIT -> CANCELLED, each by one atomic
// compare-and-swap, so a timeout ends expired or cancelled, never both.
//
// A periodic timeout (HashedWheelTimer::new_periodic) goes round: INIT (armed) -> EXPIRED (a run
// is due and handed over) -> RUNNING (the run has started) -> INIT (armed for the next period).
// It never ends expired: it ends CANCELLED, by cancel() (from INIT, EXPIRED or RUNNING), by
// stop(), or when its job is dropped unrun. A run that has not started when cancel() returns
// true never starts; a run already started finishes.
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>

namespace wheel {

class HashedWheelTimer;
class LoopWheel;
class Timeout;

namespace detail {
class TimerCore;
class BucketStore;
class HashedLayout;
class HierarchicalLayout;
class PeriodicTimeout;
struct CancelLink;
struct TimeoutList;

// Where a timeout's entry sits in its wheel: bucket number and index within the bucket.
struct WheelSlot {
  std::uint32_t bucket;
  std::uint32_t index;
};

// What a node needs to know about its task's type. One table per task type, found through a
// 16-bit index instead of a vtable pointer: a node is 32 bytes, not 48 (see task_timeout.h).
struct TaskOps {
  void (*invoke)(Timeout& node);                 // runs the task
  void (*destroy_task)(Timeout& node) noexcept;  // destroys the task; called at most once
  void (*destroy_node)(Timeout* node) noexcept;  // destroys the node and frees its memory
  bool periodic;                                 // the node is a PeriodicTimeout
};
// Registers the table of one task type and returns its index. Throws std::length_error beyond
// 65,536 task types. Safe from any thread.
std::uint16_t register_task_ops(const TaskOps* ops);
// The table registered under `index`.
const TaskOps& task_ops(std::uint16_t index) noexcept;
}  // namespace detail

class Timeout {
 public:
  Timeout(const Timeout&) = delete;
  Timeout& operator=(const Timeout&) = delete;

  // Cancels the timeout if it has neither run nor been cancelled. Returns true only for the call
  // that cancelled it; false when it already expired, was cancelled, or its timer was stopped or
  // destroyed. The timer's worker destroys the task about 1 ms after cancel() calls pause, on
  // its next tick at the latest.
  // Periodic timeouts: cancel() succeeds at any time until the timeout has ended; no run starts
  // after it returned true, a run in progress finishes (its task is destroyed when it returns).
  // Safe from any thread, the task's own included, and after the timer is gone.
  bool cancel();

  // True once cancel() succeeded, or once stop()/destruction of the timer dropped the timeout
  // unrun. Safe from any thread.
  bool is_cancelled() const { return state_.load(std::memory_order_acquire) == kCancelled; }

  // True once the task has been handed to run (so a running task sees its own timeout expired).
  // A periodic timeout is expired only while a run is due or in progress, and not in between.
  // Safe from any thread.
  bool is_expired() const {
    const std::uint8_t state = state_.load(std::memory_order_acquire);
    return state == kExpired || state == kRunning;
  }

  // True for a timeout scheduled with HashedWheelTimer::new_periodic(). Safe from any thread.
  bool is_periodic() const { return detail::task_ops(ops_).periodic; }

  // The timer that created this timeout. REQUIRES: that timer has not been destroyed.
  HashedWheelTimer& timer() const;

 protected:
  Timeout(detail::TimerCore* core, std::uint16_t ops) : ops_(ops), core_(core) {}
  ~Timeout() = default;  // nodes are destroyed through TaskOps::destroy_node

 private:
  friend class TimeoutHandle;
  friend class TimerJob;
  friend class detail::TimerCore;
  friend class detail::BucketStore;
  friend class detail::HashedLayout;
  friend class detail::HierarchicalLayout;
  friend struct detail::CancelLink;
  friend struct detail::TimeoutList;
  friend class wheel::LoopWheel;

  // kRunning: periodic timeouts only, while a run is in progress.
  enum State : std::uint8_t { kInit = 0, kCancelled = 1, kExpired = 2, kRunning = 3 };
  // Where the worker keeps the node; touched by the worker thread only, except for a periodic
  // node handed to the executor (kAtExecutor), which the thread running its job re-arms.
  enum Place : std::uint8_t {
    kInQueue,            // submitted (or re-armed), not yet moved into the wheel
    kInWheel,            // in a wheel bucket; its cancellation unlinks it
    kCancelSeenInQueue,  // cancelled while queued: task destroyed, the queue drops the reference
    kDetached,           // out of queue and wheel, cancelled; its queued cancellation retires it
    kRetired,            // done: ran, cancelled or handed over; the timer holds no reference
    kAtExecutor          // periodic, a run handed to the executor; its job re-arms or retires it
  };

  void invoke() { detail::task_ops(ops_).invoke(*this); }
  void destroy_task() noexcept { detail::task_ops(ops_).destroy_task(*this); }
  void invoke_guarded() noexcept;  // invoke(), with exceptions caught and logged

  void add_ref() noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
  void release() noexcept {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1)
      detail::task_ops(ops_).destroy_node(this);
  }
  // Destroys the task unless that was done already.
  void drop_task() noexcept {
    if (task_alive_) {
      destroy_task();
      task_alive_ = false;
    }
  }
  // The one way a timeout leaves its timer for good (it ran, or its cancellation, stop() or
  // its job's end retired it): task destroyed, place kRetired, the timer's reference dropped,
  // so the node goes back to the pool once no handle holds it. Whoever counts the timeout in
  // the timer's pending count counts it out (TimerCore::count_out); unlinking from the wheel
  // is the caller's too. Called by the thread that owns the node at that moment.
  void retire() noexcept {
    drop_task();
    place_ = kRetired;
    release();
  }
  bool try_transition(State to, State from = kInit) noexcept {
    std::uint8_t expected = from;
    return state_.compare_exchange_strong(expected, to, std::memory_order_acq_rel,
                                          std::memory_order_acquire);
  }

  // Two references at birth: the first handle and the timer.
  std::atomic<std::uint32_t> refs_{2};
  std::atomic<std::uint8_t> state_{kInit};
  // One byte. Never written by two threads at once: the worker hands a node over (to an
  // executor, or to stop()) before anyone else writes task_alive_.
  std::uint8_t place_ : 7 = kInQueue;
  std::uint8_t task_alive_ : 1 = 1;
  std::uint16_t ops_;
  // While queued (and on the worker's ready list): the next node. In the wheel: where its
  // entry is; the wheel's buckets are arrays of entries, so a walk over a bucket touches no node.
  union {
    Timeout* queue_next_ = nullptr;
    detail::WheelSlot slot_;
  };
  // The worker's view of deadline_or_link_ (see there): the deadline, or -1 once cancel() has
  // put its link there. Worker only.
  std::int64_t deadline() const noexcept {
    const std::int64_t value = deadline_or_link_.load(std::memory_order_acquire);
    return value < 0 ? -1 : value;
  }
  // Stores `deadline` (>= 0) unless cancel() has put its link there; false then. Worker only.
  bool set_deadline(std::int64_t deadline) noexcept {
    std::int64_t value = deadline_or_link_.load(std::memory_order_relaxed);
    while (value >= 0) {
      if (deadline_or_link_.compare_exchange_weak(value, deadline, std::memory_order_relaxed)) {
        return true;
      }
    }
    return false;
  }

  // For a single-threaded owner (LoopWheel), where no cancel() can race: the same fields with
  // plain (relaxed) stores, no read-modify-write and no fence.
  void store_deadline_unshared(std::int64_t deadline) noexcept {
    deadline_or_link_.store(deadline, std::memory_order_relaxed);
  }
  bool expire_unshared() noexcept {
    if (state_.load(std::memory_order_relaxed) != kInit) return false;
    state_.store(kExpired, std::memory_order_relaxed);
    return true;
  }

  // One field for two phases, so that a pending timeout does not pay 8 bytes for a
  // cancellation it may never have. Until cancel() succeeds: the deadline, >= 0 (nanoseconds
  // since the timer's start while queued, the tick it is due at once in the wheel). Then, from
  // the cancelling thread: the link of the cancellation stack, stored negative (kLinkTag |
  // address), so that no deadline can be taken for it. The worker reads the deadline through
  // deadline() and writes it only through set_deadline(), which never overwrites a link; a
  // cancelled timeout needs no deadline, its cancellation retires it.
  std::atomic<std::int64_t> deadline_or_link_{0};
  detail::TimerCore* core_;
};

// A copyable, reference-counting pointer to a Timeout (like std::shared_ptr<Timeout>, without a
// second allocation). Copies may be used from different threads; one handle object may not be
// mutated from two threads at once, as with shared_ptr.
class TimeoutHandle {
 public:
  TimeoutHandle() noexcept = default;
  TimeoutHandle(const TimeoutHandle& other) noexcept : node_(other.node_) {
    if (node_ != nullptr) node_->add_ref();
  }
  TimeoutHandle(TimeoutHandle&& other) noexcept : node_(std::exchange(other.node_, nullptr)) {}
  TimeoutHandle& operator=(TimeoutHandle other) noexcept {
    std::swap(node_, other.node_);
    return *this;
  }
  ~TimeoutHandle() { reset(); }

  // Drops this reference; the handle becomes empty.
  void reset() noexcept {
    if (node_ != nullptr) std::exchange(node_, nullptr)->release();
  }

  Timeout* get() const noexcept { return node_; }
  Timeout* operator->() const noexcept { return node_; }
  Timeout& operator*() const noexcept { return *node_; }
  explicit operator bool() const noexcept { return node_ != nullptr; }
  friend bool operator==(const TimeoutHandle& a, const TimeoutHandle& b) noexcept {
    return a.node_ == b.node_;
  }

 private:
  friend class detail::TimerCore;
  friend class TimerJob;
  struct Adopt {};
  TimeoutHandle(Timeout* node, Adopt) noexcept : node_(node) {}  // takes over one reference

  Timeout* node_ = nullptr;
};

}  // namespace wheel
