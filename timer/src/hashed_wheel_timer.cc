// SPDX-License-Identifier: Apache-2.0
#include "wheel/hashed_wheel_timer.h"

#include <atomic>
#include <bit>
#include <limits>
#include <string>

#include <spdlog/spdlog.h>

#include "wheel/logger.h"

#include "timer_core.h"

namespace wheel {

namespace {

constexpr std::size_t kMaxTicksPerWheel = std::size_t{1} << 30;
constexpr std::chrono::nanoseconds kMinTick = std::chrono::milliseconds(1);
// Netty warns past 64 live timers: each one is a thread, and one timer is meant to serve many.
constexpr int kWarnLiveTimers = 64;

std::atomic<int> live_timers{0};
std::atomic<bool> warned_live_timers{false};

TimerOptions validated(TimerOptions options) {
  if (options.tick_duration <= std::chrono::nanoseconds::zero()) {
    throw std::invalid_argument("tick_duration must be greater than 0, got " +
                                std::to_string(options.tick_duration.count()) + "ns");
  }
  if (options.ticks_per_wheel == 0 || options.ticks_per_wheel > kMaxTicksPerWheel) {
    throw std::invalid_argument("ticks_per_wheel must be in 1..2^30, got " +
                                std::to_string(options.ticks_per_wheel));
  }
  if (options.layout != TimerLayout::kHashed && options.layout != TimerLayout::kHierarchical) {
    throw std::invalid_argument("layout must be TimerLayout::kHashed or kHierarchical, got " +
                                std::to_string(static_cast<int>(options.layout)));
  }
  options.ticks_per_wheel = std::bit_ceil(options.ticks_per_wheel);
  if (options.layout == TimerLayout::kHierarchical && options.ticks_per_wheel < 2) {
    throw std::invalid_argument(
        "ticks_per_wheel must be at least 2 for the hierarchical layout, got 1");
  }
  if (options.tick_duration < kMinTick) {
    wheel::logger()->warn("wheel: tick_duration {}ns is below 1ms; using 1ms",
                          options.tick_duration.count());
    options.tick_duration = kMinTick;
  }
  const auto wheel = static_cast<std::int64_t>(options.ticks_per_wheel);
  if (options.tick_duration.count() >= std::numeric_limits<std::int64_t>::max() / wheel) {
    throw std::invalid_argument("tick_duration * ticks_per_wheel overflows: tick_duration " +
                                std::to_string(options.tick_duration.count()) +
                                "ns, ticks_per_wheel " + std::to_string(wheel));
  }
  return options;
}

}  // namespace

HashedWheelTimer::HashedWheelTimer() : HashedWheelTimer(TimerOptions{}) {}

HashedWheelTimer::HashedWheelTimer(TimerOptions options)
    : core_(std::make_unique<detail::TimerCore>(*this, validated(std::move(options)))) {
  if (live_timers.fetch_add(1, std::memory_order_relaxed) + 1 > kWarnLiveTimers &&
      !warned_live_timers.exchange(true)) {
    wheel::logger()->warn(
        "wheel: more than {} HashedWheelTimer instances are alive; share one timer, each "
        "costs a thread",
        kWarnLiveTimers);
  }
}

HashedWheelTimer::~HashedWheelTimer() {
  core_.reset();
  live_timers.fetch_sub(1, std::memory_order_relaxed);
}

void HashedWheelTimer::start() {
  core_->start();
}
std::vector<TimerJob> HashedWheelTimer::stop() {
  return core_->stop();
}
std::vector<TimerJob> HashedWheelTimer::drain() {
  return core_->drain();
}
bool HashedWheelTimer::is_stopped() const {
  return core_->is_stopped();
}
std::size_t HashedWheelTimer::pending_timeouts() const {
  return core_->pending();
}
std::chrono::nanoseconds HashedWheelTimer::tick_duration() const {
  return core_->tick();
}
std::size_t HashedWheelTimer::ticks_per_wheel() const {
  return core_->buckets();
}

void HashedWheelTimer::reserve_slot() {
  core_->reserve_slot();
}
void HashedWheelTimer::release_slot() noexcept {
  core_->release_slot();
}
TimeoutHandle HashedWheelTimer::submit(Timeout* node, std::chrono::nanoseconds delay) {
  return core_->submit(node, delay);
}
std::shared_ptr<detail::PeriodicGate> HashedWheelTimer::periodic_gate() const {
  return core_->periodic_gate();
}

}  // namespace wheel
