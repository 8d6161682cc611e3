// SPDX-License-Identifier: Apache-2.0
#include "heap_timer.h"

#include <pthread.h>

#include <cassert>
#include <limits>
#include <stdexcept>

#include "wheel/detail/saturating.h"

namespace wheel::bench {

namespace {

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Longest single sleep: keeps wait_until() far from time_point overflow.
constexpr std::int64_t kMaxSleepNs = std::int64_t{3600} * 1'000'000'000;

}  // namespace

bool HeapTimeout::cancel() {
  if (!try_transition(kCancelled)) return false;
  HeapTimer* timer = timer_;
  std::function<void()> task;
  {
    std::lock_guard lock(timer->mutex_);
    // -1: the worker popped it an instant ago and will see the cancellation instead of running.
    if (index_ >= 0) timer->remove(this);
    task = std::move(task_);
  }
  return true;  // `task` (and its captures) is destroyed here, outside the lock
}

HeapTimer::HeapTimer(std::string thread_name) : thread_name_(std::move(thread_name)) {}

HeapTimer::~HeapTimer() {
  stop();
}

void HeapTimer::start() {
  std::lock_guard lock(mutex_);
  if (shutdown_) throw std::logic_error("HeapTimer cannot be started once stopped");
  if (started_) return;
  started_ = true;
  worker_ = std::thread([this] { worker_main(); });
}

HeapTimeoutHandle HeapTimer::new_timeout(std::function<void()> task,
                                         std::chrono::nanoseconds delay) {
  if (!task) throw std::invalid_argument("new_timeout: task is empty");
  auto node = std::make_shared<HeapTimeout>(this, std::move(task));
  const std::int64_t deadline = detail::saturating_add(now_ns(), delay.count());
  bool notify = false;
  {
    std::unique_lock lock(mutex_);
    if (shutdown_) throw std::logic_error("new_timeout: the timer has been stopped");
    if (!started_) {
      started_ = true;
      worker_ = std::thread([this] { worker_main(); });
    }
    push(Entry{deadline, next_seq_++, node});
    pending_.fetch_add(1, std::memory_order_release);
    // Wake the worker only when it sleeps past the new earliest deadline.
    notify = node->index_ == 0 && worker_sleeps_until_ != 0 && deadline < worker_sleeps_until_;
  }
  if (notify) wake_.notify_one();
  return node;
}

std::vector<HeapTimeoutHandle> HeapTimer::stop() {
  if (std::this_thread::get_id() == worker_id_.load(std::memory_order_acquire)) {
    throw std::logic_error("HeapTimer::stop() cannot be called from a timer task");
  }
  std::vector<HeapTimeoutHandle> unprocessed;
  std::vector<Entry> left;
  {
    std::lock_guard lock(mutex_);
    if (shutdown_) return unprocessed;
    shutdown_ = true;
    left.swap(heap_);
    // From here a racing cancel() finds the node out of the heap.
    for (Entry& e : left) e.node->index_ = -1;
    pending_.store(0, std::memory_order_release);
  }
  wake_.notify_all();
  if (worker_.joinable()) worker_.join();
  for (Entry& e : left) {
    if (e.node->try_transition(HeapTimeout::kCancelled)) {
      e.node->task_ = nullptr;
      unprocessed.push_back(std::move(e.node));
    }
  }
  return unprocessed;
}

void HeapTimer::worker_main() {
  worker_id_.store(std::this_thread::get_id(), std::memory_order_release);
  pthread_setname_np(pthread_self(), thread_name_.substr(0, 15).c_str());
  std::vector<HeapTimeoutHandle> ready;
  std::unique_lock lock(mutex_);
  while (!shutdown_) {
    if (heap_.empty()) {
      worker_sleeps_until_ = std::numeric_limits<std::int64_t>::max();
      wake_.wait(lock);
      worker_sleeps_until_ = 0;
      continue;
    }
    const std::int64_t now = now_ns();
    const std::int64_t top = heap_.front().deadline;
    if (top > now) {
      worker_sleeps_until_ = top;
      const std::int64_t sleep = std::min(top - now, kMaxSleepNs);
      wake_.wait_until(
          lock, std::chrono::steady_clock::time_point(std::chrono::nanoseconds(now + sleep)));
      worker_sleeps_until_ = 0;
      continue;
    }
    while (!heap_.empty() && heap_.front().deadline <= now) {
      Entry e = pop_top();
      pending_.fetch_sub(1, std::memory_order_release);
      ready.push_back(std::move(e.node));
    }
    lock.unlock();
    for (HeapTimeoutHandle& node : ready) {
      // A cancel() that won the race finds the node out of the heap and leaves it to us.
      if (node->try_transition(HeapTimeout::kExpired)) {
        try {
          node->task_();
        } catch (...) {
          // As the wheel: a throwing task must not stop the worker (the bench's never throw).
        }
        node->task_ = nullptr;
      }
    }
    ready.clear();
    lock.lock();
  }
}

void HeapTimer::push(Entry entry) {
  heap_.push_back(std::move(entry));
  heap_.back().node->index_ = static_cast<std::ptrdiff_t>(heap_.size() - 1);
  sift_up(heap_.size() - 1);
}

HeapTimer::Entry HeapTimer::pop_top() {
  Entry top = std::move(heap_.front());
  top.node->index_ = -1;
  Entry last = std::move(heap_.back());
  heap_.pop_back();
  if (!heap_.empty()) {
    place(0, std::move(last));
    sift_down(0);
  }
  return top;
}

void HeapTimer::remove(HeapTimeout* node) {
  const auto i = static_cast<std::size_t>(node->index_);
  assert(i < heap_.size() && heap_[i].node.get() == node);
  node->index_ = -1;
  pending_.fetch_sub(1, std::memory_order_release);
  Entry removed = std::move(heap_[i]);  // keeps the node alive until we are done
  Entry last = std::move(heap_.back());
  heap_.pop_back();
  if (i < heap_.size()) {
    HeapTimeout* moved = last.node.get();
    place(i, std::move(last));
    sift_up(i);
    sift_down(static_cast<std::size_t>(moved->index_));
  }
}

void HeapTimer::sift_up(std::size_t i) {
  Entry e = std::move(heap_[i]);
  while (i > 0) {
    const std::size_t parent = (i - 1) / 2;
    if (!earlier(e, heap_[parent])) break;
    place(i, std::move(heap_[parent]));
    i = parent;
  }
  place(i, std::move(e));
}

void HeapTimer::sift_down(std::size_t i) {
  const std::size_t n = heap_.size();
  Entry e = std::move(heap_[i]);
  for (;;) {
    std::size_t child = 2 * i + 1;
    if (child >= n) break;
    if (child + 1 < n && earlier(heap_[child + 1], heap_[child])) ++child;
    if (!earlier(heap_[child], e)) break;
    place(i, std::move(heap_[child]));
    i = child;
  }
  place(i, std::move(e));
}

}  // namespace wheel::bench
