// SPDX-License-Identifier: Apache-2.0
// Construction options of a HashedWheelTimer; validated by its constructor.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "wheel/timer_job.h"

namespace wheel {

// Receives each expired task as a job instead of the worker running it. Called on the timer's
// worker thread; must not block for long. The receiver runs the job on a thread of its choice
// (TimerJob is move-only: see timer_job.h for a std::function-based pool).
// If the executor throws, the job it was given is destroyed unrun: its task is destroyed
// without running, an error naming the exception is logged, and the worker carries on. A
// one-shot timeout stays expired (is_expired() true: it did expire, and no one can run it any
// more); a periodic timeout ends cancelled (is_cancelled() true, no further runs).
using TimerExecutor = std::function<void(TimerJob)>;

// Receives the lag of a worker wake-up; see TimerOptions::tick_observer.
using TickObserver = std::function<void(std::chrono::nanoseconds lag)>;

// How the timer stores its pending timeouts. Both give the same API and contract; see
// hashed_wheel_timer.h for when to choose which (measurements: docs/benchmarks.md).
enum class TimerLayout {
  // Netty's hashed wheel: one wheel of ticks_per_wheel buckets; a timeout more than one turn
  // away waits in its bucket with a count of remaining rounds.
  kHashed,
  // Kafka-style hierarchical wheels: levels of ticks_per_wheel buckets each, a bucket of level
  // k spanning one whole turn of level k-1; timeouts cascade down as their bucket comes due.
  // Per-tick work is O(due + cascaded): best for fine ticks with long delays.
  kHierarchical,
};

struct TimerOptions {
  // Wheel resolution. REQUIRES > 0; values below 1 ms are raised to 1 ms with a warning.
  std::chrono::nanoseconds tick_duration = std::chrono::milliseconds(100);
  // Buckets in the wheel (per level in the hierarchical layout), rounded up to a power of two.
  // REQUIRES 1 ..= 2^30 (2 ..= 2^30 for kHierarchical). Memory, committed at construction:
  // kHashed 24 B per bucket (2^20 buckets: 24 MiB; 2^30: 24 GiB); kHierarchical 16 B per
  // bucket per level, levels added on demand. See hashed_wheel_timer.h.
  std::size_t ticks_per_wheel = 512;
  // new_timeout() throws RejectedExecutionError once this many are pending; <= 0: unlimited.
  std::int64_t max_pending_timeouts = 0;
  // Name of the worker thread (truncated to 15 characters, as Linux allows).
  std::string thread_name = "wheel-timer";
  // Wheel layout; see TimerLayout.
  TimerLayout layout = TimerLayout::kHashed;
  // Optional: where expired tasks go; empty means the worker runs them itself.
  TimerExecutor executor;
  // Optional: called with the lag of every tick the worker processes, in both layouts: the
  // time the worker began processing it minus its deadline (start + (tick + 1) x
  // tick_duration); never negative. Both layouts sleep through ticks with nothing due (the
  // hierarchical one until its next due bucket or cascade), so only ticks that do work are
  // observed: the first one of a wake-up gives the wake-up's lateness, the ones after it in
  // the same wake-up show how far a slow task or a long tick delayed the next (catch-up).
  // Called on the worker thread, O(1) per processed tick (it reuses the clock read the worker
  // makes anyway), before that tick's tasks run; must be cheap, must not block and must not
  // throw (an exception ends the process). Empty (the default): one test of the empty
  // function per processed tick, nothing else.
  TickObserver tick_observer;
};

}  // namespace wheel
