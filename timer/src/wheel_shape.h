// SPDX-License-Identifier: Apache-2.0
// Internal. The checks and rounding that every wheel's options go through (HashedWheelTimer and
// LoopWheel), so that both accept and reject exactly the same shapes, and the layout a shape
// names.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>

#include "wheel/timer_options.h"

namespace wheel::detail {

class WheelLayout;

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

// The layout `layout` with `buckets` buckets (per level). `unshared`: the owner is one thread
// and unlinks a cancelled timeout at once (LoopWheel), so the node's state and deadline are
// written with plain stores instead of compare-and-swap (the HashedWheelTimer's cancel() may
// race with its worker; a LoopWheel's cannot).
std::unique_ptr<WheelLayout> make_layout(TimerLayout layout, std::size_t buckets, bool unshared);

}  // namespace wheel::detail
