// SPDX-License-Identifier: Apache-2.0
// Compiled only into the WHEEL_TIMER_MANUAL_CLOCK copy of the timer (see manual_clock.h).
#include "manual_clock.h"

#include <algorithm>
#include <cassert>
#include <vector>

#include "timer_core.h"

#ifndef WHEEL_TIMER_MANUAL_CLOCK
#error "manual_clock.cc belongs to the WHEEL_TIMER_MANUAL_CLOCK build of the timer only"
#endif

namespace wheel::detail::manual_clock {

namespace {

std::int64_t now = 0;
std::vector<TimerCore*>& started() {
  static std::vector<TimerCore*> cores;
  return cores;
}

}  // namespace

std::int64_t now_ns() {
  return now;
}

void advance_to(std::int64_t ns) {
  assert(ns >= now);
  now = ns;
  // A task may stop or destroy a timer: step a copy, skipping any that left meanwhile.
  const std::vector<TimerCore*> cores = started();
  for (TimerCore* core : cores) {
    const auto& live = started();
    if (std::find(live.begin(), live.end(), core) != live.end()) core->run_worker_once();
  }
}

void reset() {
  assert(started().empty());
  now = 0;
}

void attach(TimerCore* core) {
  started().push_back(core);
}

void detach(TimerCore* core) noexcept {
  auto& cores = started();
  cores.erase(std::remove(cores.begin(), cores.end(), core), cores.end());
}

}  // namespace wheel::detail::manual_clock
