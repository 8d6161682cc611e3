// SPDX-License-Identifier: Apache-2.0
// Internal. A cheap upper bound of steady_clock's time, for stamping new timeouts.
//
// steady_clock::now() is a vDSO call of ~30 ns on the machines we measure, and it was the
// largest single cost of new_timeout() in a burst. The CPU's cycle counter (x86-64 rdtsc) costs
// ~10 ns. So each thread keeps its last steady_clock reading and the counter value read just
// before it; while the counter says that less than kWindowNs has passed since then, the clock
// returns that reading plus kSlackNs instead of asking the kernel again. kSlackNs bounds the
// time that can have passed as long as the counter runs at least half as fast as calibrated,
// so a reading is never below the true time and at most kSlackNs above it: a deadline computed
// from it is never early, and at most kSlackNs late.
//
// The counter is used only when it is trusted (the kernel's clocksource is "tsc": its own vDSO
// clock then reads the same counter on any CPU without correction), once its rate has been
// measured against steady_clock over kCalibrationNs, and never again once a thread's readings
// show it running at less than half or more than twice that rate (checked every
// kRateCheckNs; a kernel that found its TSC unstable would switch clocksource the same way).
// Otherwise every reading is a steady_clock reading. Abseil's absl::Now() interpolates the
// cycle counter between kernel readings in the same spirit, with a wider window.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

namespace wheel::detail {

class CycleClock {
 public:
  // What one thread remembers between readings. Zero-initialised: nothing yet.
  struct ThreadState {
    std::uint64_t cycles = 0;  // the counter, read just before `ns`
    std::int64_t ns = 0;       // the last real reading
    std::uint32_t reuses_left = 0;
    std::uint64_t check_cycles = 0;  // start of the current rate check
    std::int64_t check_ns = 0;
  };
  using CycleSource = std::uint64_t (*)();
  using NanosecondSource = std::int64_t (*)();

  // A reading is reused while the counter says it is younger than this...
  static constexpr std::int64_t kWindowNs = 2'000;
  static constexpr std::uint64_t kWindowUs = kWindowNs / 1'000;
  // ...and then returned plus this: the most time that can have passed in the window when the
  // counter runs at least half its calibrated rate.
  static constexpr std::int64_t kSlackNs = 2 * kWindowNs;
  // At most this many reuses per real reading, so that even a stalled counter is caught soon.
  static constexpr std::uint32_t kMaxReuses = 256;
  static constexpr std::int64_t kCalibrationNs = 10'000'000;
  static constexpr std::int64_t kRateCheckNs = 10'000'000;
  // A calibration or rate-check sample whose two counter reads around the real reading lie
  // further apart than this (the thread was preempted between them) is not used.
  static constexpr std::uint64_t kMaxSampleCycles = 100'000;

  // `cycles` and `ns` are read on any thread; `trusted` says whether `cycles` ticks at a
  // constant rate and agrees across CPUs. Not copyable: threads keep reading it.
  CycleClock(CycleSource cycles, NanosecondSource ns, bool trusted);
  CycleClock(const CycleClock&) = delete;
  CycleClock& operator=(const CycleClock&) = delete;

  // A reading r of `ns` with t <= r <= t + kSlackNs, where t is the true value of `ns` when the
  // call began, given the counter's rate is at least half its calibrated rate. `state` is the
  // calling thread's (one ThreadState per thread). Safe from any thread.
  std::int64_t now_upper_ns(ThreadState& state) { return upper_ns(state, cycles_()); }

  // True while readings may be reused: trusted, calibrated and not yet found at fault. Safe
  // from any thread.
  bool reusing() const { return window_cycles_.load(std::memory_order_relaxed) != 0; }

  // The counter's calibrated rate in cycles per microsecond, or 0 while not reusing.
  std::uint64_t cycles_per_us() const {
    return window_cycles_.load(std::memory_order_relaxed) / kWindowUs;
  }

  // The process's clock: rdtsc and steady_clock, trusted on x86-64 Linux with clocksource
  // "tsc". Safe from any thread.
  static CycleClock& steady();
  // steady().now_upper_ns() with the calling thread's state: nanoseconds of steady_clock since
  // its epoch. Safe from any thread.
  static std::int64_t steady_upper_ns();

 private:
  // now_upper_ns() given the counter read at the call's start.
  std::int64_t upper_ns(ThreadState& state, std::uint64_t cycles) {
    const std::uint64_t window = window_cycles_.load(std::memory_order_relaxed);
    // A counter behind the reading's (unsigned wrap-around) is never taken as "young".
    if (state.reuses_left > 0 && cycles - state.cycles < window) {
      --state.reuses_left;
      return state.ns + kSlackNs;
    }
    return read_real(state, cycles);
  }
  std::int64_t read_real(ThreadState& state, std::uint64_t cycles_before);
  void calibrate(std::uint64_t cycles_before, std::int64_t ns);
  void check_rate(ThreadState& state, std::uint64_t cycles, std::int64_t ns);
  void distrust(const char* why);
  void distrust_locked(const char* why);  // REQUIRES: calibration_mutex_ held

  const CycleSource cycles_;
  const NanosecondSource ns_;
  // Counter cycles per kWindowNs; 0 = do not reuse.
  std::atomic<std::uint64_t> window_cycles_{0};
  // The counter is never used: not trusted from the start, or found at fault since.
  std::atomic<bool> distrusted_;
  std::mutex calibration_mutex_;    // serialises every store to window_cycles_
  bool have_first_sample_ = false;  // guarded by calibration_mutex_
  std::uint64_t first_cycles_ = 0;
  std::int64_t first_ns_ = 0;
};

}  // namespace wheel::detail
