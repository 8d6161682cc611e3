// The options of wheel-bench: those of ../shared/peers/netty/TimerBench.java with the same names
// and defaults, plus --impl and the scaling run.
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
  // Set in the child process that measures memory (see fresh_process.h).
  bool memory_child = false;

  bool wants(const std::string& metric) const {
    for (const auto& m : metrics)
      if (m == metric) return true;
    return false;
  }
};

}  // namespace wheel::bench
