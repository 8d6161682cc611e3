// SPDX-License-Identifier: Apache-2.0
// The fixture of the timer's test files: every test runs once per layout, on options built by
// options_with(); Tracked counts a task's live captures. Tests of *when* something runs use a
// wheel::ManualClock (the timer then has no worker thread and runs what is due inside
// clock.advance()); step_until() moves such a clock 1 tick at a time, a bounded number of times.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <wheel/manual_clock.h>
#include <wheel/timer_options.h>

#include "support/timer_layouts.h"

namespace wheel::testing {

// Counts live instances, so a test can see when a task's captures are destroyed.
struct Tracked {
  explicit Tracked(std::atomic<int>* l) : live(l) { ++*live; }
  Tracked(const Tracked& o) : live(o.live) { ++*live; }
  ~Tracked() { --*live; }
  std::atomic<int>* live;
};

class TimerTest : public ::testing::TestWithParam<TimerLayout> {
 protected:
  TimerOptions options_with(std::chrono::nanoseconds tick = std::chrono::milliseconds(1),
                            std::size_t buckets = 512, std::string name = "wheel-timer") const {
    TimerOptions options;
    options.tick_duration = tick;
    options.ticks_per_wheel = buckets;
    options.thread_name = std::move(name);
    options.layout = GetParam();
    return options;
  }

  // options_with() whose executor keeps every job in `held`, to run later or never: a pool that
  // has not got to them yet. `held` must outlive the timer.
  TimerOptions options_holding_jobs(std::vector<TimerJob>& held) const {
    TimerOptions options = options_with();
    options.executor = [&held](TimerJob job) { held.push_back(std::move(job)); };
    return options;
  }
};

// Moves `clock` forward by `step` until `done()` holds, at most `max_steps` times; returns
// whether `done()` held.
template <class Done>
bool step_until(ManualClock& clock, std::chrono::nanoseconds step, int max_steps, Done&& done) {
  for (int i = 0; i < max_steps && !done(); ++i) clock.advance(step);
  return done();
}

// The clock reading, in whole milliseconds.
inline long long ms_of(std::chrono::nanoseconds t) {
  return static_cast<long long>(t / std::chrono::milliseconds(1));
}

}  // namespace wheel::testing
