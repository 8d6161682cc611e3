// SPDX-License-Identifier: Apache-2.0
#include "bench_report.h"

#include <malloc.h>
#include <time.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

namespace wheel::bench {

nlohmann::ordered_json number(double v) {
  if (std::isnan(v) || std::isinf(v)) return nullptr;
  if (std::fabs(v) < 1e12) v = std::round(v * 1000.0) / 1000.0;
  if (v == std::rint(v) && std::fabs(v) < 1e15) return static_cast<std::int64_t>(v);
  return v;
}

void emit(std::string_view impl, std::string_view metric, std::int64_t n, double value,
          std::string_view unit, std::int64_t tick_ms, const nlohmann::ordered_json& extra) {
  nlohmann::ordered_json line;
  line["impl"] = impl;
  line["metric"] = metric;
  line["n"] = n;
  line["value"] = number(value);
  line["unit"] = unit;
  line["tick_ms"] = tick_ms;
  for (const auto& [key, val] : extra.items()) line[key] = val;
  std::cout << line.dump() << '\n' << std::flush;
}

void log_line(const std::string& text) {
  std::cerr << "[wheel-bench] " << text << '\n';
}

std::int64_t process_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

std::int64_t thread_cpu_ns(const std::string& name) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(entry.path() / "comm");
    std::string line;
    if (!std::getline(comm, line) || line != name) continue;
    const auto tid = static_cast<clockid_t>(std::stol(entry.path().filename().string()));
    // The kernel's per-thread CPU clock of any thread in the process (CPUCLOCK_SCHED |
    // CPUCLOCK_PERTHREAD, see clock_getcpuclockid(3) and linux/posix-timers.h).
    const clockid_t clock = (~tid << 3) | 6;
    timespec ts{};
    if (clock_gettime(clock, &ts) != 0) return -1;
    return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
  }
  return -1;
}

std::int64_t heap_in_use() {
  const struct mallinfo2 info = mallinfo2();
  return static_cast<std::int64_t>(info.uordblks + info.hblkhd);
}

std::vector<std::int64_t> random_delays(std::mt19937_64& rng, std::size_t count, std::int64_t lo,
                                        std::int64_t hi) {
  std::uniform_int_distribution<std::int64_t> dist(lo, hi - 1);
  std::vector<std::int64_t> d(count);
  for (auto& x : d) x = dist(rng);
  return d;
}

void sleep_ms(std::int64_t ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

}  // namespace wheel::bench
