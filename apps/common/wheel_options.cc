// SPDX-License-Identifier: Apache-2.0
#include "wheel_options.h"

#include <bit>
#include <cstdint>
#include <limits>

namespace wheel::apps {

std::string check_wheel_options(std::chrono::nanoseconds tick, std::size_t wheel_size) {
  if (tick <= std::chrono::nanoseconds::zero()) return "--tick must be greater than 0";
  if (wheel_size == 0 || wheel_size > kMaxWheelSize) {
    return "--wheel-size must be within 1 ..= 1073741824 (2^30)";
  }
  // Below 1 ms the timer raises the tick to 1 ms (with a warning) before this check.
  tick = std::max(tick, std::chrono::nanoseconds(std::chrono::milliseconds(1)));
  const auto buckets = static_cast<std::int64_t>(std::bit_ceil(wheel_size));
  if (tick.count() >= std::numeric_limits<std::int64_t>::max() / buckets) {
    return "--tick times --wheel-size (rounded up to a power of two) must be below 292 years, "
           "got " +
           std::to_string(tick.count() / 1'000'000) + " ms x " + std::to_string(buckets);
  }
  return {};
}

}  // namespace wheel::apps
