// The two thread-safe timers wheel-bench measures, behind one interface so that every metric
// runs the same code for both: wheel::HashedWheelTimer ("wheel") and the binary-heap HeapTimer
// ("heap"). The heap has no ticks; it gets the same options and ignores them.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>

#include <wheel/hashed_wheel_timer.h>

#include "heap_timer.h"

namespace wheel::bench {

class WheelImpl {
 public:
  static constexpr const char* kName = "wheel";
  using Handle = wheel::TimeoutHandle;

  WheelImpl(std::int64_t tick_ms, std::int64_t buckets, const std::string& thread_name)
      : timer_(options(tick_ms, buckets, thread_name)) {}
  void start() { timer_.start(); }
  template <class F>
  Handle schedule(F&& task, std::chrono::nanoseconds delay) {
    return timer_.new_timeout(std::forward<F>(task), delay);
  }
  static bool cancel(const Handle& h) { return h->cancel(); }
  std::size_t pending() const { return timer_.pending_timeouts(); }
  std::size_t stop() { return timer_.stop().size(); }

 private:
  static wheel::TimerOptions options(std::int64_t tick_ms, std::int64_t buckets,
                                     const std::string& thread_name) {
    wheel::TimerOptions o;
    o.tick_duration = std::chrono::milliseconds(tick_ms);
    o.ticks_per_wheel = static_cast<std::size_t>(buckets);
    o.thread_name = thread_name;
    return o;
  }
  wheel::HashedWheelTimer timer_;
};

class HeapImpl {
 public:
  static constexpr const char* kName = "heap";
  using Handle = HeapTimeoutHandle;

  HeapImpl(std::int64_t /*tick_ms*/, std::int64_t /*buckets*/, const std::string& thread_name)
      : timer_(thread_name) {}
  void start() { timer_.start(); }
  template <class F>
  Handle schedule(F&& task, std::chrono::nanoseconds delay) {
    return timer_.new_timeout(std::forward<F>(task), delay);
  }
  static bool cancel(const Handle& h) { return h->cancel(); }
  std::size_t pending() const { return timer_.pending_timeouts(); }
  std::size_t stop() { return timer_.stop().size(); }

 private:
  HeapTimer timer_;
};

}  // namespace wheel::bench
