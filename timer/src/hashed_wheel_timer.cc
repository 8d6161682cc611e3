// SPDX-License-Identifier: Apache-2.0
#include "wheel/hashed_wheel_timer.h"

#include <atomic>
#include <string>

#include <spdlog/spdlog.h>

#include "wheel/logger.h"

#include "timer_core.h"
#include "wheel_shape.h"

namespace wheel {

namespace {

// Netty warns past 64 live timers: each one is a thread, and one timer is meant to serve many.
constexpr int kWarnLiveTimers = 64;

std::atomic<int> live_timers{0};
std::atomic<bool> warned_live_timers{false};

TimerOptions validated(TimerOptions options) {
  const detail::WheelShape shape =
      detail::validated_shape({options.tick_duration, options.ticks_per_wheel, options.layout});
  options.tick_duration = shape.tick_duration;
  options.ticks_per_wheel = shape.ticks_per_wheel;
  return options;
}

}  // namespace

HashedWheelTimer::HashedWheelTimer() : HashedWheelTimer(TimerOptions{}) {}

HashedWheelTimer::HashedWheelTimer(TimerOptions options)
    : HashedWheelTimer(std::move(options), nullptr) {}

HashedWheelTimer::HashedWheelTimer(TimerOptions options, ManualClock& clock)
    : HashedWheelTimer(std::move(options), &clock) {}

HashedWheelTimer::HashedWheelTimer(TimerOptions options, ManualClock* clock)
    : core_(std::make_unique<detail::TimerCore>(*this, validated(std::move(options)), clock)) {
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
