// SPDX-License-Identifier: Apache-2.0
#include "wheel_shape.h"

#include <bit>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include <spdlog/spdlog.h>

#include "hashed_layout.h"
#include "hierarchical_layout.h"
#include "wheel/logger.h"

namespace wheel::detail {

namespace {
constexpr std::size_t kMaxTicksPerWheel = std::size_t{1} << 30;
constexpr std::chrono::nanoseconds kMinTick = std::chrono::milliseconds(1);
}  // namespace

WheelShape validated_shape(WheelShape shape) {
  if (shape.tick_duration <= std::chrono::nanoseconds::zero()) {
    throw std::invalid_argument("tick_duration must be greater than 0, got " +
                                std::to_string(shape.tick_duration.count()) + "ns");
  }
  if (shape.ticks_per_wheel == 0 || shape.ticks_per_wheel > kMaxTicksPerWheel) {
    throw std::invalid_argument("ticks_per_wheel must be in 1..2^30, got " +
                                std::to_string(shape.ticks_per_wheel));
  }
  if (shape.layout != TimerLayout::kHashed && shape.layout != TimerLayout::kHierarchical) {
    throw std::invalid_argument("layout must be TimerLayout::kHashed or kHierarchical, got " +
                                std::to_string(static_cast<int>(shape.layout)));
  }
  shape.ticks_per_wheel = std::bit_ceil(shape.ticks_per_wheel);
  if (shape.layout == TimerLayout::kHierarchical && shape.ticks_per_wheel < 2) {
    throw std::invalid_argument(
        "ticks_per_wheel must be at least 2 for the hierarchical layout, got 1");
  }
  if (shape.tick_duration < kMinTick) {
    wheel::logger()->warn("wheel: tick_duration {}ns is below 1ms; using 1ms",
                          shape.tick_duration.count());
    shape.tick_duration = kMinTick;
  }
  const auto wheel = static_cast<std::int64_t>(shape.ticks_per_wheel);
  if (shape.tick_duration.count() >= std::numeric_limits<std::int64_t>::max() / wheel) {
    throw std::invalid_argument("tick_duration * ticks_per_wheel overflows: tick_duration " +
                                std::to_string(shape.tick_duration.count()) +
                                "ns, ticks_per_wheel " + std::to_string(wheel));
  }
  return shape;
}

std::unique_ptr<WheelLayout> make_layout(TimerLayout layout, std::size_t buckets, bool unshared) {
  if (layout == TimerLayout::kHierarchical) {
    return std::make_unique<HierarchicalLayout>(buckets, unshared);
  }
  return std::make_unique<HashedLayout>(buckets, unshared);
}

}  // namespace wheel::detail
