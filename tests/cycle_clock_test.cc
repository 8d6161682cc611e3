// SPDX-License-Identifier: Apache-2.0
// Tests of the clock that stamps new timeouts (timer/src/cycle_clock.h): a reading is never
// below the true time and at most kSlackNs above it; the cycle counter is reused only when
// trusted, calibrated and consistent, and never for long.
#include "cycle_clock.h"
#include "support/wait_until.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace wheel::detail {
namespace {

std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

TEST(CycleClockTest, ProcessClockIsNeverBelowSteadyClockNorMoreThanTheSlackAbove) {
  // Several threads, bursts (readings reused) and pauses (fresh readings, a thread may move to
  // another CPU) for well past the calibration time, so that both paths are exercised.
  std::atomic<int> early{0};
  std::atomic<int> too_late{0};
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      const std::int64_t end = steady_ns() + 3 * CycleClock::kCalibrationNs;
      for (int i = 0; steady_ns() < end || i < 200'000; ++i) {
        const std::int64_t before = steady_ns();
        const std::int64_t reading = CycleClock::steady_upper_ns();
        const std::int64_t after = steady_ns();
        if (reading < before) ++early;
        if (reading > after + CycleClock::kSlackNs) ++too_late;
        if (i % 1000 == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(early.load(), 0);
  EXPECT_EQ(too_late.load(), 0);
}

// A counter and a steady clock that move only when the test says.
std::uint64_t fake_cycles = 0;
std::uint64_t fake_cycles_per_read = 0;  // added after each read of the counter
std::int64_t fake_ns = 0;
int fake_ns_reads = 0;

std::uint64_t read_fake_cycles() {
  const std::uint64_t value = fake_cycles;
  fake_cycles += fake_cycles_per_read;
  return value;
}
std::int64_t read_fake_ns() {
  ++fake_ns_reads;
  return fake_ns;
}

class FakeCycleClockTest : public ::testing::Test {
 protected:
  static constexpr std::uint64_t kCyclesPerUs = 2'000;  // a 2 GHz counter

  void SetUp() override {
    fake_cycles = 1'000'000;
    fake_cycles_per_read = 0;
    fake_ns = 5'000'000;
    fake_ns_reads = 0;
  }
  static void advance_ns(std::int64_t ns, std::uint64_t cycles_per_us = kCyclesPerUs) {
    fake_ns += ns;
    fake_cycles += static_cast<std::uint64_t>(ns) * cycles_per_us / 1'000;
  }
  // Two readings kCalibrationNs apart: the clock has measured the counter's rate.
  static void calibrate(CycleClock& clock, CycleClock::ThreadState& state) {
    clock.now_upper_ns(state);
    advance_ns(CycleClock::kCalibrationNs);
    clock.now_upper_ns(state);
  }
};

TEST_F(FakeCycleClockTest, UntrustedCounterIsNeverUsed) {
  CycleClock clock(&read_fake_cycles, &read_fake_ns, /*trusted=*/false);
  CycleClock::ThreadState state;
  calibrate(clock, state);
  EXPECT_FALSE(clock.reusing());
  for (int i = 0; i < 10; ++i) {
    advance_ns(10);
    EXPECT_EQ(clock.now_upper_ns(state), fake_ns);
  }
  EXPECT_EQ(fake_ns_reads, 12);
}

TEST_F(FakeCycleClockTest, CalibratesThenReusesAReadingWithinTheWindowPlusTheSlack) {
  CycleClock clock(&read_fake_cycles, &read_fake_ns, /*trusted=*/true);
  CycleClock::ThreadState state;
  clock.now_upper_ns(state);
  advance_ns(CycleClock::kCalibrationNs / 2);
  EXPECT_EQ(clock.now_upper_ns(state), fake_ns);  // too early to calibrate
  EXPECT_FALSE(clock.reusing());
  advance_ns(CycleClock::kCalibrationNs / 2);
  const std::int64_t real = clock.now_upper_ns(state);
  EXPECT_EQ(real, fake_ns);
  ASSERT_TRUE(clock.reusing());
  EXPECT_EQ(clock.cycles_per_us(), kCyclesPerUs);

  const int reads = fake_ns_reads;
  advance_ns(CycleClock::kWindowNs - 1);
  EXPECT_EQ(clock.now_upper_ns(state), real + CycleClock::kSlackNs);
  EXPECT_GE(real + CycleClock::kSlackNs, fake_ns);
  EXPECT_EQ(fake_ns_reads, reads);
  advance_ns(1);  // the window is over: a fresh reading
  EXPECT_EQ(clock.now_upper_ns(state), fake_ns);
  EXPECT_EQ(fake_ns_reads, reads + 1);
}

TEST_F(FakeCycleClockTest, StalledCounterGetsAFreshReadingAfterMaxReuses) {
  CycleClock clock(&read_fake_cycles, &read_fake_ns, /*trusted=*/true);
  CycleClock::ThreadState state;
  calibrate(clock, state);
  const int reads = fake_ns_reads;
  for (std::uint32_t i = 0; i < CycleClock::kMaxReuses; ++i) clock.now_upper_ns(state);
  EXPECT_EQ(fake_ns_reads, reads);
  fake_ns += 1'000'000;  // time passes, the counter does not
  EXPECT_EQ(clock.now_upper_ns(state), fake_ns);
  EXPECT_EQ(fake_ns_reads, reads + 1);
}

TEST_F(FakeCycleClockTest, CounterBehindTheReadingGetsAFreshReading) {
  CycleClock clock(&read_fake_cycles, &read_fake_ns, /*trusted=*/true);
  CycleClock::ThreadState state;
  calibrate(clock, state);
  fake_cycles -= 10;  // e.g. read on another CPU whose counter is a little behind
  fake_ns += 100;
  EXPECT_EQ(clock.now_upper_ns(state), fake_ns);
}

TEST_F(FakeCycleClockTest, CounterAtAChangedRateIsDistrustedForGood) {
  CycleClock clock(&read_fake_cycles, &read_fake_ns, /*trusted=*/true);
  CycleClock::ThreadState state;
  calibrate(clock, state);
  ASSERT_TRUE(clock.reusing());
  advance_ns(CycleClock::kWindowNs * 5);
  clock.now_upper_ns(state);  // starts this thread's rate check
  advance_ns(CycleClock::kRateCheckNs, kCyclesPerUs / 4);
  EXPECT_EQ(clock.now_upper_ns(state), fake_ns);
  EXPECT_FALSE(clock.reusing());
  // From now on every reading is a fresh one, even right after another.
  const int reads = fake_ns_reads;
  EXPECT_EQ(clock.now_upper_ns(state), fake_ns);
  EXPECT_EQ(clock.now_upper_ns(state), fake_ns);
  EXPECT_EQ(fake_ns_reads, reads + 2);
  advance_ns(2 * CycleClock::kCalibrationNs);
  clock.now_upper_ns(state);
  EXPECT_FALSE(clock.reusing());
}

TEST_F(FakeCycleClockTest, CounterAtTheCalibratedRatePassesTheRateCheck) {
  CycleClock clock(&read_fake_cycles, &read_fake_ns, /*trusted=*/true);
  CycleClock::ThreadState state;
  calibrate(clock, state);
  for (int i = 0; i < 5; ++i) {
    advance_ns(CycleClock::kRateCheckNs);
    clock.now_upper_ns(state);
  }
  EXPECT_TRUE(clock.reusing());
}

TEST_F(FakeCycleClockTest, RateCheckIgnoresAPreemptedSample) {
  CycleClock clock(&read_fake_cycles, &read_fake_ns, /*trusted=*/true);
  CycleClock::ThreadState state;
  calibrate(clock, state);
  advance_ns(CycleClock::kWindowNs * 5);
  clock.now_upper_ns(state);  // starts this thread's rate check
  // The thread stopped between reading the counter and the clock: the counter seems slow, but
  // the counter's second read, after the clock's, shows the gap.
  advance_ns(CycleClock::kRateCheckNs, kCyclesPerUs / 4);
  fake_cycles_per_read = CycleClock::kMaxSampleCycles + 1;
  clock.now_upper_ns(state);
  EXPECT_TRUE(clock.reusing());
}

TEST_F(FakeCycleClockTest, PreemptedCalibrationSampleIsNotUsed) {
  CycleClock clock(&read_fake_cycles, &read_fake_ns, /*trusted=*/true);
  CycleClock::ThreadState state;
  fake_cycles_per_read = CycleClock::kMaxSampleCycles + 1;  // every sample blurred
  calibrate(clock, state);
  advance_ns(CycleClock::kCalibrationNs);
  clock.now_upper_ns(state);
  EXPECT_FALSE(clock.reusing());
  fake_cycles_per_read = 0;  // clean samples from now on
  calibrate(clock, state);
  EXPECT_TRUE(clock.reusing());
  EXPECT_EQ(clock.cycles_per_us(), kCyclesPerUs);
}

TEST_F(FakeCycleClockTest, ImplausibleRateIsDistrusted) {
  CycleClock clock(&read_fake_cycles, &read_fake_ns, /*trusted=*/true);
  CycleClock::ThreadState state;
  clock.now_upper_ns(state);
  advance_ns(CycleClock::kCalibrationNs, /*cycles_per_us=*/50);  // a 50 MHz counter
  clock.now_upper_ns(state);
  EXPECT_FALSE(clock.reusing());
  calibrate(clock, state);  // at a good rate now, but too late
  EXPECT_FALSE(clock.reusing());
}

TEST(CycleClockTest, ProcessClockReusesReadingsWhenTheKernelTrustsTheTsc) {
#if defined(__x86_64__) && defined(__linux__)
  std::ifstream in("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  std::string source;
  if (!(in >> source) || source != "tsc") GTEST_SKIP() << "clocksource is " << source;
  // Calibration takes two clean readings kCalibrationNs apart: an event to wait for with a
  // generous bound, not a fixed 10 x kCalibrationNs (a stalled thread on a loaded machine,
  // under a sanitizer, can use that up before its second reading).
  EXPECT_TRUE(wheel_test::wait_until([] {
    CycleClock::steady_upper_ns();
    return CycleClock::steady().reusing();
  }));
  EXPECT_GT(CycleClock::steady().cycles_per_us(), 100u);
#else
  GTEST_SKIP() << "the cycle counter is used on x86-64 Linux only";
#endif
}

}  // namespace
}  // namespace wheel::detail
