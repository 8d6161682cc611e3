// SPDX-License-Identifier: Apache-2.0
// Output and measurement helpers shared by every wheel-bench runner: the JSON-line shape of
// ../shared/peers/netty/TimerBench.java, CPU and heap readings, random delays.
#pragma once

#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace wheel::bench {

// Prints one line {"impl","metric","n","value","unit","tick_ms", extras...} on stdout and
// flushes. Integral values print without a fraction, others with at most 3 decimals, NaN as
// null, as TimerBench does.
void emit(std::string_view impl, std::string_view metric, std::int64_t n, double value,
          std::string_view unit, std::int64_t tick_ms,
          const nlohmann::ordered_json& extra = nlohmann::ordered_json::object());

// A diagnostic line on stderr, prefixed "[wheel-bench]".
void log_line(const std::string& text);

// Rounds the way emit() prints: integral stays integral, else 3 decimals.
nlohmann::ordered_json number(double v);

// steady_clock now, in nanoseconds.
inline std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// CPU time of the whole process, in nanoseconds.
std::int64_t process_cpu_ns();
// CPU time of the thread of this process named `name` (as /proc/self/task/*/comm shows it), in
// nanoseconds; -1 when no such thread exists.
std::int64_t thread_cpu_ns(const std::string& name);
// Bytes malloc has handed out and not taken back (main arena plus mmapped chunks, glibc
// mallinfo2): the C++ counterpart of the JVM's used heap. Allocate on the calling thread.
std::int64_t heap_in_use();

// `count` delays uniform in [lo, hi) nanoseconds.
std::vector<std::int64_t> random_delays(std::mt19937_64& rng, std::size_t count, std::int64_t lo,
                                        std::int64_t hi);

// Sleeps for `ms` milliseconds.
void sleep_ms(std::int64_t ms);

}  // namespace wheel::bench
