// SPDX-License-Identifier: Apache-2.0
// Internal to the apps: checks a command line's wheel options (--tick, --wheel-size) by the
// rule HashedWheelTimer's constructor applies, so that a bad value exits 2 with a message
// instead of failing later (wheel/timer_options.h states the rule).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace wheel::apps {

// The largest --wheel-size: the timer's 2^30.
inline constexpr std::size_t kMaxWheelSize = std::size_t{1} << 30;

// Empty when the timer accepts `tick` and `wheel_size`; otherwise why not, in plain numbers:
// tick must be positive, wheel_size within 1 ..= 2^30, and tick times wheel_size (rounded up
// to a power of two) must fit in nanoseconds. Safe from any thread.
std::string check_wheel_options(std::chrono::nanoseconds tick, std::size_t wheel_size);

}  // namespace wheel::apps
