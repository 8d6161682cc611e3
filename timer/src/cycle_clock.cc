// SPDX-License-Identifier: Apache-2.0
#include "cycle_clock.h"

#include <chrono>
#include <fstream>
#include <string>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include <spdlog/spdlog.h>

#include "wheel/logger.h"

namespace wheel::detail {

CycleClock::CycleClock(CycleSource cycles, NanosecondSource ns, bool trusted)
    : cycles_(cycles), ns_(ns), distrusted_(!trusted) {}

std::int64_t CycleClock::read_real(ThreadState& state, std::uint64_t cycles_before) {
  const std::int64_t ns = ns_();
  if (!distrusted_.load(std::memory_order_relaxed)) {
    if (window_cycles_.load(std::memory_order_relaxed) == 0) {
      calibrate(cycles_before, ns);
    } else {
      check_rate(state, cycles_before, ns);
    }
  }
  // The counter was read before `ns`: the time since `ns` is at most what it counts from here.
  state.cycles = cycles_before;
  state.ns = ns;
  state.reuses_left = kMaxReuses;
  return ns;
}

void CycleClock::calibrate(std::uint64_t cycles_before, std::int64_t ns) {
  if (cycles_() - cycles_before > kMaxSampleCycles) return;  // preempted: a blurred sample
  std::lock_guard lock(calibration_mutex_);
  if (window_cycles_.load(std::memory_order_relaxed) != 0 ||
      distrusted_.load(std::memory_order_relaxed)) {
    return;
  }
  if (!have_first_sample_) {
    have_first_sample_ = true;
    first_cycles_ = cycles_before;
    first_ns_ = ns;
    return;
  }
  const std::int64_t span_ns = ns - first_ns_;
  if (span_ns < kCalibrationNs) return;
  if (cycles_before < first_cycles_) return distrust_locked("the cycle counter went backwards");
  const std::uint64_t per_us =
      (cycles_before - first_cycles_) / static_cast<std::uint64_t>(span_ns / 1'000);
  // Below 100 MHz a microsecond holds too few cycles to bound it; above 10 GHz is no clock.
  if (per_us < 100 || per_us > 10'000) {
    return distrust_locked("the cycle counter's rate is implausible");
  }
  window_cycles_.store(per_us * kWindowUs, std::memory_order_relaxed);
  wheel::logger()->debug(
      "wheel: cycle counter at {} MHz; new timeouts reuse a clock reading up to {} ns old", per_us,
      kWindowNs);
}

void CycleClock::check_rate(ThreadState& state, std::uint64_t cycles, std::int64_t ns) {
  const bool restart = state.check_ns == 0 || ns < state.check_ns;
  if (!restart && ns - state.check_ns < kRateCheckNs) return;
  // Only a clean sample judges or starts a check: a thread preempted between reading the
  // counter and the clock would otherwise look like a counter running slow.
  if (cycles_() - cycles > kMaxSampleCycles) {
    if (restart) state.check_ns = 0;
    return;
  }
  if (!restart) {
    const std::int64_t span_ns = ns - state.check_ns;
    // A gap of over ~25 days between two readings of one thread just restarts the check, so
    // that the products below fit in 64 bits (at most 10,000 cycles per microsecond).
    if (cycles < state.check_cycles) return distrust("the cycle counter went backwards");
    if (span_ns <= std::int64_t{1} << 41) {
      const std::uint64_t counted = cycles - state.check_cycles;
      const std::uint64_t expected = cycles_per_us() * static_cast<std::uint64_t>(span_ns) / 1'000;
      if (counted < expected / 2 || counted > expected * 2) {
        return distrust("the cycle counter's rate changed");
      }
    }
  }
  state.check_cycles = cycles;
  state.check_ns = ns;
}

void CycleClock::distrust(const char* why) {
  std::lock_guard lock(calibration_mutex_);
  distrust_locked(why);
}

void CycleClock::distrust_locked(const char* why) {
  // Under the mutex, as calibration's store of the window: a calibration cannot finish after
  // the distrust and turn reuse back on.
  window_cycles_.store(0, std::memory_order_relaxed);
  if (!distrusted_.exchange(true)) {
    wheel::logger()->warn("wheel: {}; new timeouts read steady_clock every time", why);
  }
}

namespace {

std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

#if defined(__x86_64__) && defined(__linux__)
std::uint64_t read_tsc() {
  return __rdtsc();
}
// The kernel's vDSO clock reads the TSC on whichever CPU it runs, uncorrected, only when its
// clocksource is "tsc"; with any other clocksource the TSC is not to be trusted across CPUs.
bool tsc_trusted() {
  std::ifstream in("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  std::string source;
  return (in >> source) && source == "tsc";
}
#else
std::uint64_t read_tsc() {
  return 0;
}
bool tsc_trusted() {
  return false;
}
#endif

}  // namespace

CycleClock& CycleClock::steady() {
  // Never destroyed: timers in static objects may still read it during exit.
  static CycleClock* clock = new CycleClock(&read_tsc, &steady_ns, tsc_trusted());
  return *clock;
}

std::int64_t CycleClock::steady_upper_ns() {
  thread_local ThreadState state;
  return steady().upper_ns(state, read_tsc());  // read_tsc() inline, not through cycles_
}

}  // namespace wheel::detail
