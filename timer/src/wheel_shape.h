// SPDX-License-Identifier: Apache-2.0
// Internal. The checks and rounding that every wheel's options go through (HashedWheelTimer and
// LoopWheel), so that both accept and reject exactly the same shapes.
#pragma once

#include <chrono>
#include <cstddef>

#include "wheel/timer_options.h"

namespace wheel::detail {

struct WheelShape {
  std::chrono::nanoseconds tick_duration;
  std::size_t ticks_per_wheel;
  TimerLayout layout;
};

// Validates `shape` and returns it rounded: throws std::invalid_argument naming the option for a
// tick <= 0, ticks_per_wheel == 0 or > 2^30 (or 1 with the hierarchical layout), a layout that
// is not a TimerLayout value, or tick_duration * ticks_per_wheel overflowing. Rounds
// ticks_per_wheel up to a power of two and raises a tick below 1 ms to 1 ms with a warning.
WheelShape validated_shape(WheelShape shape);

}  // namespace wheel::detail
