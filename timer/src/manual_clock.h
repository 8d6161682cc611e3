// SPDX-License-Identifier: Apache-2.0
// Internal, for tests/fuzz only. A clock that stands still until the test moves it, for a copy
// of the timer compiled with WHEEL_TIMER_MANUAL_CLOCK (tests/fuzz/CMakeLists.txt builds one).
// In that copy no timer starts a worker thread; each advance_to() does, on the calling thread,
// what the worker of every started timer would have done by then, so a test can check the
// timer's contract against a model deterministically. The library everyone links is compiled
// without the macro and contains none of this: no branch, no member, no thread-safety cost.
// Not thread-safe: one thread drives the clock, the timers and their tasks. drain() would wait
// for ever (nothing advances the clock while it blocks): manual-clock tests do not call it.
#pragma once

#include <cstdint>

namespace wheel::detail {

class TimerCore;

namespace manual_clock {

// Nanoseconds since the process started using the clock; 0 at first.
std::int64_t now_ns();

// Moves the clock to `ns` and lets every started timer process what is due by then (tasks run
// here). REQUIRES: ns >= now_ns(); not called from a timer task.
void advance_to(std::int64_t ns);

// Back to 0, for the next test case. REQUIRES: no timer attached (all stopped or destroyed).
void reset();

// A started timer joins the clock; a stopped or destroyed one leaves it. TimerCore only.
void attach(TimerCore* core);
void detach(TimerCore* core) noexcept;

}  // namespace manual_clock

}  // namespace wheel::detail
