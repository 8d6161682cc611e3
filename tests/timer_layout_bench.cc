// SPDX-License-Identifier: Apache-2.0
// timer-layout-bench: worker CPU, memory and schedule/cancel cost of HashedWheelTimer's two
// layouts, for comparing them with each other and with Netty's TimerBench `longdelay`
// (same method: N pending timeouts with delays uniform in [min, max] seconds, none expiring
// while the worker's CPU time is measured). Prints one JSON line per measurement.
//
//   timer-layout-bench [--layout hashed|hier] [--n N] [--tick-ms T] [--secs S] [--min-s A]
//                      [--max-s B] [--wheel W] [--seed X] [--lateness]
// With --lateness: N timeouts with delays uniform in [min, max] run to the end instead, and
// their lateness against steady_clock (p50, p99, max) is reported.
#include <time.h>

#include <dirent.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "wheel/hashed_wheel_timer.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  wheel::TimerLayout layout = wheel::TimerLayout::kHashed;
  std::int64_t n = 1'000'000;
  std::int64_t tick_ms = 1;
  double secs = 5;
  double min_s = 60;
  double max_s = 86'400;
  std::size_t wheel = 512;
  std::uint64_t seed = 42;
  bool lateness = false;
};

[[noreturn]] void usage(const char* msg) {
  std::fprintf(
      stderr,
      "timer-layout-bench: %s\nusage: timer-layout-bench [--layout hashed|hier] [--n N] "
      "[--tick-ms T] [--secs S] [--min-s A] [--max-s B] [--wheel W] [--seed X] [--lateness]\n",
      msg);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") usage("help");
    if (a == "--lateness") {
      o.lateness = true;
      continue;
    }
    if (i + 1 >= argc) usage(("missing value for " + a).c_str());
    const std::string v = argv[++i];
    if (a == "--layout") {
      if (v == "hashed") {
        o.layout = wheel::TimerLayout::kHashed;
      } else if (v == "hier") {
        o.layout = wheel::TimerLayout::kHierarchical;
      } else {
        usage("--layout must be hashed or hier");
      }
    } else if (a == "--n") {
      o.n = std::stoll(v);
    } else if (a == "--tick-ms") {
      o.tick_ms = std::stoll(v);
    } else if (a == "--secs") {
      o.secs = std::stod(v);
    } else if (a == "--min-s") {
      o.min_s = std::stod(v);
    } else if (a == "--max-s") {
      o.max_s = std::stod(v);
    } else if (a == "--wheel") {
      o.wheel = std::stoull(v);
    } else if (a == "--seed") {
      o.seed = std::stoull(v);
    } else {
      usage(("unknown option " + a).c_str());
    }
  }
  if (o.n < 1 || o.n > 100'000'000) usage("--n must be in 1..100000000");
  if (o.tick_ms < 1 || o.tick_ms > 60'000) usage("--tick-ms must be in 1..60000");
  if (!(o.secs > 0 && o.secs <= 3600)) usage("--secs must be in (0, 3600]");
  if (!(o.min_s >= 0 && o.max_s >= o.min_s && o.max_s <= 1e7))
    usage("need 0 <= --min-s <= --max-s <= 1e7");
  return o;
}

int find_thread(const std::string& name) {
  DIR* dir = opendir("/proc/self/task");
  int found = -1;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream comm(std::string("/proc/self/task/") + e->d_name + "/comm");
    std::string line;
    std::getline(comm, line);
    if (line == name) found = std::atoi(e->d_name);
  }
  closedir(dir);
  return found;
}

// CPU time of thread `tid` of this process, in ns (Linux's per-thread CPU clock id).
std::int64_t thread_cpu_ns(int tid) {
  const clockid_t id = static_cast<clockid_t>((~static_cast<unsigned>(tid) << 3) | 6);
  timespec ts{};
  if (clock_gettime(id, &ts) != 0) return -1;
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

std::int64_t status_field(int tid, const std::string& key) {
  std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(key + ":", 0) == 0) return std::atoll(line.c_str() + key.size() + 1);
  }
  return -1;
}

std::int64_t rss_bytes() {
  std::ifstream f("/proc/self/statm");
  std::int64_t size = 0, resident = 0;
  f >> size >> resident;
  return resident * 4096;
}

double ns_between(Clock::time_point a, Clock::time_point b) {
  return static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count());
}

// Runs every timeout to its end and reports how late each fired against steady_clock.
int measure_lateness(const Options& o, wheel::HashedWheelTimer& timer, const char* layout,
                     const std::vector<std::int64_t>& delays) {
  std::vector<std::int64_t> late_ns(delays.size());
  std::atomic<std::size_t> done{0};
  for (std::size_t i = 0; i < delays.size(); ++i) {
    const auto due = Clock::now() + std::chrono::nanoseconds(delays[i]);
    timer.new_timeout(
        [&, i, due] {
          late_ns[i] =
              std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - due).count();
          done.fetch_add(1, std::memory_order_release);
        },
        std::chrono::nanoseconds(delays[i]));
  }
  while (done.load(std::memory_order_acquire) != delays.size()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::sort(late_ns.begin(), late_ns.end());
  const auto at = [&](double q) {
    return static_cast<double>(late_ns[static_cast<std::size_t>(q * (late_ns.size() - 1))]) / 1e3;
  };
  std::printf(
      "{\"layout\":\"%s\",\"n\":%zu,\"tick_ms\":%lld,\"wheel\":%zu,\"min_s\":%g,\"max_s\":%g,"
      "\"lateness_min_us\":%.1f,\"lateness_p50_us\":%.1f,\"lateness_p99_us\":%.1f,"
      "\"lateness_max_us\":%.1f}\n",
      layout, delays.size(), static_cast<long long>(o.tick_ms), timer.ticks_per_wheel(), o.min_s,
      o.max_s, static_cast<double>(late_ns.front()) / 1e3, at(0.5), at(0.99),
      static_cast<double>(late_ns.back()) / 1e3);
  timer.stop();
  return late_ns.front() < 0 ? 1 : 0;  // a timeout fired early
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const char* layout = o.layout == wheel::TimerLayout::kHashed ? "hashed" : "hier";
  wheel::TimerOptions options;
  options.tick_duration = std::chrono::milliseconds(o.tick_ms);
  options.ticks_per_wheel = o.wheel;
  options.layout = o.layout;
  options.thread_name = "layout-bench";
  wheel::HashedWheelTimer timer(options);
  timer.start();
  // Warm the node pool's first slab (as wheel-bench does) so the baseline includes it.
  timer.new_timeout([] {}, std::chrono::hours(1000))->cancel();

  std::mt19937_64 rng(o.seed);
  const auto lo = static_cast<std::int64_t>(o.min_s * 1e9);
  const auto hi = static_cast<std::int64_t>(o.max_s * 1e9);
  std::uniform_int_distribution<std::int64_t> dist(lo, hi);
  std::vector<std::int64_t> delays(static_cast<std::size_t>(o.n));
  for (auto& d : delays) d = dist(rng);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  if (o.lateness) return measure_lateness(o, timer, layout, delays);

  const std::int64_t rss0 = rss_bytes();
  std::vector<wheel::TimeoutHandle> handles;
  handles.reserve(delays.size());
  const auto s0 = Clock::now();
  for (const auto d : delays)
    handles.push_back(timer.new_timeout([] {}, std::chrono::nanoseconds(d)));
  const auto s1 = Clock::now();
  // Let the worker move every timeout into the wheel (at most 100,000 a tick), as TimerBench.
  const auto settle =
      std::chrono::milliseconds(std::max<std::int64_t>(1000, (o.n / 100'000 + 2) * o.tick_ms * 2));
  std::this_thread::sleep_for(settle);
  const std::int64_t rss1 = rss_bytes();

  const int tid = find_thread("layout-bench");
  const std::int64_t cpu0 = thread_cpu_ns(tid);
  const std::int64_t sw0 = status_field(tid, "voluntary_ctxt_switches");
  const auto a = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(o.secs));
  const std::int64_t cpu1 = thread_cpu_ns(tid);
  const std::int64_t sw1 = status_field(tid, "voluntary_ctxt_switches");
  const auto b = Clock::now();
  const double secs = ns_between(a, b) / 1e9;
  const std::size_t pending = timer.pending_timeouts();

  // Cancel in random order, then time until the worker has processed every cancellation.
  std::shuffle(handles.begin(), handles.end(), rng);
  const auto c0 = Clock::now();
  for (auto& h : handles) h->cancel();
  const auto c1 = Clock::now();
  while (timer.pending_timeouts() != 0) std::this_thread::sleep_for(std::chrono::microseconds(100));
  const auto c2 = Clock::now();

  std::printf(
      "{\"layout\":\"%s\",\"n\":%lld,\"tick_ms\":%lld,\"wheel\":%zu,\"min_s\":%g,\"max_s\":%g,"
      "\"secs\":%.2f,\"pending\":%zu,\"worker_cpu_ms_per_s\":%.3f,\"worker_wakeups_per_s\":%.1f,"
      "\"bytes_per_pending_incl_handle\":%.1f,\"schedule_ns_per_op\":%.1f,"
      "\"cancel_ns_per_op\":%.1f,\"cancelled_to_pending0_ms\":%.2f}\n",
      layout, static_cast<long long>(o.n), static_cast<long long>(o.tick_ms),
      timer.ticks_per_wheel(), o.min_s, o.max_s, secs, pending,
      static_cast<double>(cpu1 - cpu0) / 1e6 / secs, static_cast<double>(sw1 - sw0) / secs,
      static_cast<double>(rss1 - rss0) / static_cast<double>(o.n),
      ns_between(s0, s1) / static_cast<double>(o.n), ns_between(c0, c1) / static_cast<double>(o.n),
      ns_between(c1, c2) / 1e6);
  timer.stop();
  return 0;
}
