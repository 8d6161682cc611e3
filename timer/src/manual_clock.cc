// SPDX-License-Identifier: Apache-2.0
#include "wheel/manual_clock.h"

#include <algorithm>
#include <cassert>
#include <stdexcept>
#include <string>

#include "reentry_guard.h"
#include "wheel/detail/saturating.h"

namespace wheel {

ManualClock::~ManualClock() {
  assert(timers_.empty() && "a timer still runs on this ManualClock");
}

void ManualClock::advance(std::chrono::nanoseconds by) {
  if (by < std::chrono::nanoseconds::zero()) {
    throw std::invalid_argument("ManualClock::advance: negative step " +
                                std::to_string(by.count()) + "ns");
  }
  const detail::ReentryGuard guard(advancing_, "ManualClock::advance cannot be called from a task");
  now_ = std::chrono::nanoseconds(detail::saturating_add(now_.count(), by.count()));
  // A task may stop, destroy or start a timer: step a copy, skipping any that left meanwhile.
  const std::vector<detail::ClockDriven*> timers = timers_;
  for (detail::ClockDriven* timer : timers) {
    if (std::find(timers_.begin(), timers_.end(), timer) != timers_.end()) {
      timer->run_worker_once();
    }
  }
}

void ManualClock::advance_to(std::chrono::nanoseconds to) {
  if (to < now_) {
    throw std::invalid_argument("ManualClock::advance_to: " + std::to_string(to.count()) +
                                "ns is before now (" + std::to_string(now_.count()) + "ns)");
  }
  advance(to - now_);
}

void ManualClock::attach(detail::ClockDriven* timer) {
  timers_.push_back(timer);
}

void ManualClock::detach(detail::ClockDriven* timer) noexcept {
  timers_.erase(std::remove(timers_.begin(), timers_.end(), timer), timers_.end());
}

}  // namespace wheel
