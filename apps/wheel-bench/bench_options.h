// SPDX-License-Identifier: Apache-2.0
// The options of wheel-bench: those of ../shared/peers/netty/TimerBench.java with the same names
// and defaults, plus --impl, the scaling run and the upper-level lateness.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace wheel::bench {

struct BenchOptions {
  std::int64_t n = 1'000'000;  // timeouts for schedule/cancel/expire/memory
  std::vector<std::string> metrics = {"schedule", "cancel", "expire", "memory", "lateness", "idle"};
  std::vector<std::int64_t> ticks = {1, 100};  // ms, for schedule/cancel/expire/memory
  std::int64_t wheel = 512;                    // ticks per wheel
  std::int64_t warmup_n = 200'000;
  std::int64_t warmup_rounds = 3;
  std::vector<std::int64_t> lateness_ticks = {1, 10};
  std::int64_t lateness_n = 10'000;
  std::vector<std::int64_t> idle_ticks = {100, 1};
  double idle_secs = 5.0;
  std::uint64_t seed = 42;
  std::vector<std::string> impls = {"wheel"};
  // The scaling metric: pending counts and the wheel's tick for them.
  std::vector<std::int64_t> scaling_n = {1'000, 10'000, 100'000, 1'000'000, 10'000'000};
  std::int64_t scaling_tick = 100;
  // The scaling metric's worker cost per tick: measured at this tick for this long.
  std::int64_t scaling_cost_tick = 1;
  double scaling_secs = 2.0;
  // The longdelay metric (TimerBench's names and defaults): long_n timeouts with delays uniform
  // in [long_min_s, long_max_s] seconds, worker CPU over long_secs at each of long_ticks (ms).
  std::int64_t long_n = 1'000'000;
  std::vector<std::int64_t> long_ticks = {1};
  double long_secs = 10.0;
  std::int64_t long_min_s = 60;
  std::int64_t long_max_s = 86'400;
  // The upperlateness metric (ours): timeouts that start beyond one turn, at each of these ticks.
  std::vector<std::int64_t> upper_ticks = {1};
  // Set in the child process that measures memory (see fresh_process.h).
  bool memory_child = false;

  bool wants(const std::string& metric) const {
    for (const auto& m : metrics)
      if (m == metric) return true;
    return false;
  }
};

}  // namespace wheel::bench
