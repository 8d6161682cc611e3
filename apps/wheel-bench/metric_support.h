// SPDX-License-Identifier: Apache-2.0
// What every timer metric of wheel-bench shares: time units, a countdown of fired tasks, waiting
// for a timer to empty, stopping it with a note, and worker thread names to find its CPU clock.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "bench_report.h"

namespace wheel::bench {

constexpr std::int64_t kMs = 1'000'000;
constexpr std::int64_t kSec = 1'000 * kMs;

// Counts tasks down; the last one records the time and wakes the waiter.
class Countdown {
 public:
  explicit Countdown(std::int64_t count) : left_(count) {}
  void hit() {
    if (left_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      done_at_ = now_ns();
      std::lock_guard lock(mutex_);
      done_ = true;
      cv_.notify_all();
    }
  }
  bool wait_for(std::chrono::seconds limit) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, limit, [&] { return done_; });
  }
  std::int64_t done_at() const { return done_at_; }
  std::int64_t left() const { return left_.load(); }

 private:
  std::atomic<std::int64_t> left_;
  std::int64_t done_at_ = 0;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
};

// Polls pending() at ~50 us until it reads 0; the steady time it did, or -1 after `limit_ms`.
template <class Timer>
std::int64_t wait_pending_zero(const Timer& t, std::int64_t limit_ms) {
  const std::int64_t limit = now_ns() + limit_ms * kMs;
  for (;;) {
    if (t.pending() == 0) return now_ns();
    if (now_ns() > limit) return -1;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

template <class Timer>
void stop_timer(Timer& t) {
  if (const std::size_t left = t.stop()) {
    log_line("stop(): " + std::to_string(left) + " unprocessed timeouts returned");
  }
}

// A fresh worker thread name, short enough (<= 15 characters) for Linux to keep it whole, so
// that thread_cpu_ns() finds the timer's worker by it.
inline std::string thread_name(const char* what) {
  static std::atomic<int> seq{0};
  return std::string("bench-") + what + "-" + std::to_string(seq.fetch_add(1) + 1);
}

// The CPU time of the worker thread named `name`, in nanoseconds: waits up to 5 s for the thread
// to appear (a timer starts its worker asynchronously); -1 if it never does.
inline std::int64_t worker_cpu_ns(const std::string& name) {
  for (int i = 0; i < 5'000; ++i) {
    const std::int64_t ns = thread_cpu_ns(name);
    if (ns >= 0) return ns;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return -1;
}

}  // namespace wheel::bench
