// SPDX-License-Identifier: Apache-2.0
// The thread-safe timers wheel-bench measures, behind one adaptor so that every metric runs the
// same code for each: wheel::HashedWheelTimer in its hashed layout ("wheel", Netty's) and in its
// hierarchical layout ("hier"), and the binary-heap HeapTimer ("heap").
// The heap has no ticks; it gets the same options and ignores them.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>

#include <wheel/hashed_wheel_timer.h>

#include "heap_timer.h"

namespace wheel::bench {

// One timer under test. `Kind` names it (kName, the JSON "impl") and builds it (make()); the
// timer must offer new_timeout(task, delay), pending_timeouts(), start() and stop(), and its
// handles cancel().
template <class Kind>
class BenchTimer {
 public:
  static constexpr const char* kName = Kind::kName;
  using Timer = typename Kind::Timer;
  using Handle = decltype(std::declval<Timer&>().new_timeout([] {}, std::chrono::nanoseconds{}));

  // `thread_name` names the worker thread, so that its CPU clock can be found (thread_cpu_ns).
  BenchTimer(std::int64_t tick_ms, std::int64_t buckets, const std::string& thread_name)
      : timer_(Kind::make(tick_ms, buckets, thread_name)) {}
  void start() { timer_.start(); }
  template <class F>
  Handle schedule(F&& task, std::chrono::nanoseconds delay) {
    return timer_.new_timeout(std::forward<F>(task), delay);
  }
  static bool cancel(const Handle& h) { return h->cancel(); }
  std::size_t pending() const { return timer_.pending_timeouts(); }
  std::size_t stop() { return timer_.stop().size(); }

 private:
  Timer timer_;
};

// wheel::HashedWheelTimer in `layout`; `buckets` is the wheel size (per level when hierarchical).
template <wheel::TimerLayout layout>
struct WheelKind {
  static constexpr const char* kName = layout == wheel::TimerLayout::kHashed ? "wheel" : "hier";
  using Timer = wheel::HashedWheelTimer;
  static wheel::TimerOptions options(std::int64_t tick_ms, std::int64_t buckets,
                                     const std::string& thread_name) {
    wheel::TimerOptions o;
    o.tick_duration = std::chrono::milliseconds(tick_ms);
    o.ticks_per_wheel = static_cast<std::size_t>(buckets);
    o.thread_name = thread_name;
    o.layout = layout;
    return o;
  }
  static Timer make(std::int64_t tick_ms, std::int64_t buckets, const std::string& thread_name) {
    return Timer(options(tick_ms, buckets, thread_name));
  }
};

struct HeapKind {
  static constexpr const char* kName = "heap";
  using Timer = HeapTimer;
  static Timer make(std::int64_t /*tick_ms*/, std::int64_t /*buckets*/,
                    const std::string& thread_name) {
    return Timer(thread_name);
  }
};

using WheelImpl = BenchTimer<WheelKind<wheel::TimerLayout::kHashed>>;
using HierImpl = BenchTimer<WheelKind<wheel::TimerLayout::kHierarchical>>;
using HeapImpl = BenchTimer<HeapKind>;

}  // namespace wheel::bench
