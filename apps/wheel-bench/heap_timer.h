// SPDX-License-Identifier: Apache-2.0
// HeapTimer: the classic timer design the wheel is measured against, a binary min-heap of
// deadlines behind one mutex, with one worker thread that sleeps until the earliest deadline
// (java.util.concurrent's ScheduledThreadPoolExecutor works this way). Every node knows its heap
// index, so cancel() removes it at once in O(log n); schedule is O(log n) too.
//
// Threads. new_timeout(), HeapTimeout::cancel(), pending_timeouts() and stop() are safe from any
// thread (stop() not from a task). Tasks run on the worker, one after another; a task may
// schedule and cancel. Expire first, then invoke: the worker pops every due node under the lock
// and runs the tasks after releasing it.
//
// Ownership mirrors wheel::TimeoutHandle: a HeapTimeoutHandle is a shared_ptr; the heap holds one
// more reference while the timeout is pending. The task is destroyed once it has run or was
// cancelled. A handle may outlive its timer: stop() and the destructor mark every unrun timeout
// cancelled, so a later cancel() returns false without touching the timer.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace wheel::bench {

class HeapTimer;

class HeapTimeout {
 public:
  // Cancels the timeout if it has neither run nor been cancelled; the node leaves the heap before
  // this returns. True only for the call that cancelled it. Safe from any thread.
  bool cancel();
  bool is_cancelled() const { return state_.load(std::memory_order_acquire) == kCancelled; }
  // True once the task has been handed to run.
  bool is_expired() const { return state_.load(std::memory_order_acquire) == kExpired; }

  HeapTimeout(HeapTimer* timer, std::function<void()> task)
      : timer_(timer), task_(std::move(task)) {}

 private:
  friend class HeapTimer;
  enum State : std::uint8_t { kInit, kCancelled, kExpired };
  bool try_transition(State to) {
    std::uint8_t expected = kInit;
    return state_.compare_exchange_strong(expected, to, std::memory_order_acq_rel);
  }

  std::atomic<std::uint8_t> state_{kInit};
  std::ptrdiff_t index_ = -1;  // position in the heap, -1 when not in it; guarded by the mutex
  HeapTimer* timer_;           // valid while the state is kInit
  std::function<void()> task_;
};

using HeapTimeoutHandle = std::shared_ptr<HeapTimeout>;

class HeapTimer {
 public:
  explicit HeapTimer(std::string thread_name = "heap-timer");
  // Stops the timer; tasks that never ran are destroyed without running.
  ~HeapTimer();
  HeapTimer(const HeapTimer&) = delete;
  HeapTimer& operator=(const HeapTimer&) = delete;

  // Schedules `task` to run once `delay` has passed (steady_clock; negative delays run at once).
  // Starts the worker on first use. Throws std::invalid_argument for an empty task and
  // std::logic_error after stop(). Safe from any thread.
  HeapTimeoutHandle new_timeout(std::function<void()> task, std::chrono::nanoseconds delay);

  // Starts the worker if it is not running. Throws std::logic_error after stop().
  void start();
  // Wakes and joins the worker, then returns every timeout that neither ran nor was cancelled,
  // each now marked cancelled. A second stop() returns nothing. Not from a task.
  std::vector<HeapTimeoutHandle> stop();
  // Timeouts in the heap. Safe from any thread.
  std::size_t pending_timeouts() const { return pending_.load(std::memory_order_acquire); }

 private:
  friend class HeapTimeout;
  struct Entry {
    std::int64_t deadline;  // steady_clock nanoseconds
    std::uint64_t seq;      // FIFO among equal deadlines
    HeapTimeoutHandle node;
  };
  static bool earlier(const Entry& a, const Entry& b) {
    return a.deadline != b.deadline ? a.deadline < b.deadline : a.seq < b.seq;
  }

  void worker_main();
  void remove(HeapTimeout* node);  // REQUIRES: mutex_ held, node in the heap
  void push(Entry entry);          // REQUIRES: mutex_ held
  Entry pop_top();                 // REQUIRES: mutex_ held, heap not empty
  void sift_up(std::size_t i);
  void sift_down(std::size_t i);
  void place(std::size_t i, Entry&& e) {
    heap_[i] = std::move(e);
    heap_[i].node->index_ = static_cast<std::ptrdiff_t>(i);
  }

  const std::string thread_name_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<Entry> heap_;  // guarded by mutex_
  std::uint64_t next_seq_ = 0;
  bool started_ = false;
  bool shutdown_ = false;
  std::int64_t worker_sleeps_until_ = 0;  // the worker's wake-up deadline, 0 when not asleep
  std::atomic<std::size_t> pending_{0};
  std::thread worker_;
  std::atomic<std::thread::id> worker_id_{};
};

}  // namespace wheel::bench
