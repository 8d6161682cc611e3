// SPDX-License-Identifier: Apache-2.0
// wheel-jobs-deadline-bench: which layout of wheel::LoopWheel should hold the JobQueue's
// deadlines (delays, TTRs, pauses, reserve timeouts)? The load: 10^6 pending jobs with
// delays of 1 s to 1 h, millisecond tick. For each layout (and an ordered std::map, the
// structure the queue used before) it measures: scheduling them all, cancelling a tenth (deletes
// of delayed jobs), and driving time through the whole hour one millisecond at a time (the
// loop's worst case: a wakeup every tick), with every due deadline run. Times are wall-clock on
// whatever machine runs it; docs/jobs.md keeps the figures.
//
// Usage: wheel-jobs-deadline-bench [JOBS [MAX_DELAY_S]]   (defaults 1000000 3600)
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "wheel/loop_wheel.h"

namespace {

using Clock = std::chrono::steady_clock;
using Ms = std::chrono::milliseconds;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct Figures {
  double schedule_ns = 0, cancel_ns = 0, advance_s = 0, driven_s = 0;
  std::uint64_t fired = 0, wakeups = 0;
};

std::vector<std::int64_t> delays_ms(std::size_t n, std::int64_t max_s) {
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<std::int64_t> pick(1000, max_s * 1000);
  std::vector<std::int64_t> out(n);
  for (auto& d : out) d = pick(rng);
  return out;
}

Figures run_wheel(wheel::TimerLayout layout, std::size_t buckets,
                  const std::vector<std::int64_t>& delays, std::int64_t horizon_ms) {
  wheel::LoopWheelOptions options;
  options.tick_duration = Ms(1);
  options.ticks_per_wheel = buckets;
  options.layout = layout;
  wheel::LoopWheel w(options);
  Figures f;
  std::uint64_t fired = 0;
  std::vector<wheel::LoopWheel::Handle> handles(delays.size());
  auto start = Clock::now();
  for (std::size_t i = 0; i < delays.size(); ++i) {
    // As the queue does: a deadline at D ms goes 1 ns before D, so it runs once D has passed.
    handles[i] = w.schedule_at([&fired] { ++fired; }, std::chrono::nanoseconds(Ms(delays[i])) -
                                                          std::chrono::nanoseconds(1));
  }
  f.schedule_ns = seconds_since(start) * 1e9 / static_cast<double>(delays.size());
  start = Clock::now();
  std::size_t cancelled = 0;
  for (std::size_t i = 0; i < handles.size(); i += 10, ++cancelled) w.cancel(handles[i]);
  f.cancel_ns = seconds_since(start) * 1e9 / static_cast<double>(cancelled);
  start = Clock::now();
  for (std::int64_t t = 1; t <= horizon_ms; ++t) w.advance(Ms(t));
  f.advance_s = seconds_since(start);
  f.fired = fired;
  // The driver's way: sleep until next_due(), advance to it (the same load, a fresh wheel).
  wheel::LoopWheel driven(options);
  for (std::size_t i = 0; i < delays.size(); ++i) {
    if (i % 10 == 0) continue;
    driven.schedule_at([] {},
                       std::chrono::nanoseconds(Ms(delays[i])) - std::chrono::nanoseconds(1));
  }
  start = Clock::now();
  while (auto due = driven.next_due()) {
    driven.advance(*due);
    ++f.wakeups;
  }
  f.driven_s = seconds_since(start);
  return f;
}

// The structure the queue used before: an ordered map by (time, sequence) plus an index.
Figures run_map(const std::vector<std::int64_t>& delays, std::int64_t horizon_ms) {
  std::map<std::pair<std::int64_t, std::uint64_t>, std::uint64_t> by_time;
  std::unordered_map<std::uint64_t, std::int64_t> when;
  Figures f;
  auto start = Clock::now();
  for (std::size_t i = 0; i < delays.size(); ++i) {
    by_time.emplace(std::pair{delays[i], i + 1}, i);
    when.emplace(i + 1, delays[i]);
  }
  f.schedule_ns = seconds_since(start) * 1e9 / static_cast<double>(delays.size());
  start = Clock::now();
  std::size_t cancelled = 0;
  for (std::size_t i = 0; i < delays.size(); i += 10, ++cancelled) {
    auto it = when.find(i + 1);
    by_time.erase(std::pair{it->second, i + 1});
    when.erase(it);
  }
  f.cancel_ns = seconds_since(start) * 1e9 / static_cast<double>(cancelled);
  start = Clock::now();
  for (std::int64_t t = 1; t <= horizon_ms; ++t) {
    while (!by_time.empty() && by_time.begin()->first.first <= t) {
      when.erase(by_time.begin()->first.second);
      by_time.erase(by_time.begin());
      ++f.fired;
    }
  }
  f.advance_s = seconds_since(start);
  // The driver's way: wake at the first deadline, run what is due (the map is exact).
  for (std::size_t i = 0; i < delays.size(); ++i) {
    if (i % 10 != 0)
      by_time.emplace(std::pair{delays[i], i + 1}, i), when.emplace(i + 1, delays[i]);
  }
  start = Clock::now();
  while (!by_time.empty()) {
    const std::int64_t t = by_time.begin()->first.first;
    while (!by_time.empty() && by_time.begin()->first.first <= t) {
      when.erase(by_time.begin()->first.second);
      by_time.erase(by_time.begin());
    }
    ++f.wakeups;
  }
  f.driven_s = seconds_since(start);
  return f;
}

void print(const char* name, const Figures& f, std::size_t expected) {
  std::printf(
      "{\"structure\":\"%s\",\"schedule_ns\":%.0f,\"cancel_ns\":%.0f,\"advance_1h_by_1ms_s\":%.2f,"
      "\"advance_by_next_due_s\":%.2f,\"wakeups\":%llu,\"fired\":%llu,\"ok\":%s}\n",
      name, f.schedule_ns, f.cancel_ns, f.advance_s, f.driven_s,
      static_cast<unsigned long long>(f.wakeups), static_cast<unsigned long long>(f.fired),
      f.fired == expected ? "true" : "false");
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t jobs = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1'000'000;
  const std::int64_t max_s = argc > 2 ? std::strtoll(argv[2], nullptr, 10) : 3600;
  if (jobs == 0 || jobs > 100'000'000 || max_s < 1 || max_s > 86'400) {
    std::fprintf(stderr,
                 "usage: wheel-jobs-deadline-bench [JOBS 1..100000000 [MAX_DELAY_S 1..86400]]\n");
    return 2;
  }
  const auto delays = delays_ms(jobs, max_s);
  const std::int64_t horizon = max_s * 1000 + 1;
  const std::size_t expected = jobs - (jobs + 9) / 10;
  print("std::map", run_map(delays, horizon), expected);
  print("hashed-512", run_wheel(wheel::TimerLayout::kHashed, 512, delays, horizon), expected);
  print("hashed-65536", run_wheel(wheel::TimerLayout::kHashed, 65536, delays, horizon), expected);
  print("hierarchical-64", run_wheel(wheel::TimerLayout::kHierarchical, 64, delays, horizon),
        expected);
  print("hierarchical-512", run_wheel(wheel::TimerLayout::kHierarchical, 512, delays, horizon),
        expected);
  return 0;
}
