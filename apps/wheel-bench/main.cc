// SPDX-License-Identifier: Apache-2.0
// wheel-bench: measures wheel::HashedWheelTimer (both layouts), a binary-heap timer and libuv's
// timers with the method, options and JSON-line output of ../shared/peers/netty/TimerBench.java.
// JSON lines on stdout, diagnostics on stderr. --help lists the options.
#include <exception>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench_options.h"
#include "bench_report.h"
#include "cli_style.h"
#include "libuv_bench.h"
#include "timer_impls.h"
#include "timer_metrics.h"
#include "wheel/version.h"

namespace {

// "a,b,c": a list option's value as the user would type it (also its default in --help).
template <class T>
std::string joined(const std::vector<T>& v) {
  std::ostringstream out;
  for (const auto& x : v) out << (out.tellp() > 0 ? "," : "") << x;
  return out.str();
}

}  // namespace

int main(int argc, char** argv) {
  using wheel::bench::BenchOptions;
  BenchOptions o;
  CLI::App app{"wheel-bench: timer benchmark, same metrics and JSON lines as Netty's TimerBench"};
  wheel::cli::apply_style(app, "wheel-bench", wheel::kVersion);
  using wheel::cli::integer_range;
  using wheel::cli::number_range;
  const auto ticks_ms = integer_range(1, 60'000);    // a tick of up to a minute
  const auto count = integer_range(1, 100'000'000);  // timeouts: 10^8 fit in memory
  const std::string ticks_text = ", 1 to 60000";
  const std::string count_text = ", 1 to 100000000";
  const std::string secs_text = ", 0.1 to 3600";
  // Every default shown in --help comes from BenchOptions' own initial values.
  app.add_option("--n", o.n, "timeouts for schedule/cancel/expire/memory" + count_text)
      ->check(count)
      ->capture_default_str();
  app.add_option("--metrics", o.metrics,
                 "comma-separated: schedule, cancel, expire, memory, lateness, idle, longdelay, "
                 "upperlateness, scaling")
      ->delimiter(',')
      ->check(wheel::cli::one_of({"schedule", "cancel", "expire", "memory", "lateness", "idle",
                                  "longdelay", "upperlateness", "scaling"}))
      ->default_str(joined(o.metrics));
  app.add_option("--ticks", o.ticks,
                 "tick(s) in ms for schedule/cancel/expire/memory, comma-separated" + ticks_text)
      ->delimiter(',')
      ->check(ticks_ms)
      ->default_str(joined(o.ticks));
  app.add_option("--wheel", o.wheel, "ticks per wheel, 1 to 1073741824")
      ->check(integer_range(1, 1 << 30))
      ->capture_default_str();
  app.add_option("--warmup-n", o.warmup_n, "timeouts per warm-up round, 0 to 100000000")
      ->check(integer_range(0, 100'000'000))
      ->capture_default_str();
  app.add_option("--warmup-rounds", o.warmup_rounds, "warm-up rounds, 0 to 1000")
      ->check(integer_range(0, 1'000))
      ->capture_default_str();
  app.add_option("--lateness-ticks", o.lateness_ticks,
                 "tick(s) in ms for the lateness test" + ticks_text)
      ->delimiter(',')
      ->check(ticks_ms)
      ->default_str(joined(o.lateness_ticks));
  app.add_option("--lateness-n", o.lateness_n, "timeouts in the lateness test" + count_text)
      ->check(count)
      ->capture_default_str();
  app.add_option("--idle-ticks", o.idle_ticks, "tick(s) in ms for the idle-CPU test" + ticks_text)
      ->delimiter(',')
      ->check(ticks_ms)
      ->default_str(joined(o.idle_ticks));
  app.add_option("--idle-secs", o.idle_secs, "seconds per idle-CPU measurement" + secs_text)
      ->check(number_range(0.1, 3'600))
      ->capture_default_str();
  app.add_option("--seed", o.seed, "RNG seed")->capture_default_str();
  app.add_option("--impl", o.impls,
                 "comma-separated: wheel (hashed layout), hier (hierarchical layout), heap, libuv")
      ->delimiter(',')
      ->check(wheel::cli::one_of({"wheel", "hier", "heap", "libuv"}))
      ->default_str(joined(o.impls));
  app.add_option("--scaling-n", o.scaling_n, "pending counts for the scaling metric" + count_text)
      ->delimiter(',')
      ->check(count)
      ->default_str(joined(o.scaling_n));
  app.add_option("--scaling-tick", o.scaling_tick,
                 "wheel tick in ms for the scaling metric" + ticks_text)
      ->check(ticks_ms)
      ->capture_default_str();
  app.add_option("--scaling-cost-tick", o.scaling_cost_tick,
                 "tick in ms for the scaling metric's worker cost per tick" + ticks_text)
      ->check(ticks_ms)
      ->capture_default_str();
  app.add_option("--scaling-secs", o.scaling_secs,
                 "seconds of worker CPU measured per pending count in scaling" + secs_text)
      ->check(number_range(0.1, 3'600))
      ->capture_default_str();
  // The longdelay metric, with TimerBench's option names and defaults. Bounds keep seconds * 10^9
  // far inside 64 bits and the handle array inside memory.
  app.add_option("--long-n", o.long_n, "pending timeouts in the longdelay test" + count_text)
      ->check(count)
      ->capture_default_str();
  app.add_option("--long-ticks", o.long_ticks, "tick(s) in ms for the longdelay test" + ticks_text)
      ->delimiter(',')
      ->check(ticks_ms)
      ->default_str(joined(o.long_ticks));
  app.add_option("--long-secs", o.long_secs,
                 "seconds of worker CPU measured in the longdelay test" + secs_text)
      ->check(number_range(0.1, 3'600))
      ->capture_default_str();
  app.add_option("--long-min-s", o.long_min_s,
                 "shortest delay in the longdelay test, seconds" + count_text)
      ->check(count)
      ->capture_default_str();
  app.add_option("--long-max-s", o.long_max_s,
                 "longest delay in the longdelay test, seconds" + count_text)
      ->check(count)
      ->capture_default_str();
  app.add_option("--upper-ticks", o.upper_ticks,
                 "tick(s) in ms for the upperlateness test (delays of 1 to 4 wheel turns), "
                 "1 to 1000")
      ->delimiter(',')
      ->check(integer_range(1, 1'000))
      ->default_str(joined(o.upper_ticks));
  app.add_flag("--memory-child", o.memory_child, "internal: measure memory in this process")
      ->group("");
  if (const auto exit_status = wheel::cli::parse_command_line(app, argc, argv, "wheel-bench")) {
    return *exit_status;  // --help, --version, or a usage error already printed
  }
  if (o.long_max_s < o.long_min_s) {
    std::cerr << "wheel-bench: --long-max-s (" << o.long_max_s
              << ") must be at least --long-min-s (" << o.long_min_s << ")\n";
    return 2;
  }

  std::ostringstream ticks;
  for (auto t : o.ticks) ticks << (ticks.tellp() > 0 ? "," : "") << t;
  if (!o.memory_child)
    wheel::bench::log_line("impls=" + joined(o.impls) + " n=" + std::to_string(o.n) +
                           " metrics=" + joined(o.metrics) + " ticks=" + ticks.str() +
                           " wheel=" + std::to_string(o.wheel));
  const std::int64_t start = wheel::bench::now_ns();
  try {
    for (const auto& impl : o.impls) {
      if (impl == "wheel") wheel::bench::run_all<wheel::bench::WheelImpl>(o);
      if (impl == "hier") wheel::bench::run_all<wheel::bench::HierImpl>(o);
      if (impl == "heap") wheel::bench::run_all<wheel::bench::HeapImpl>(o);
      if (impl == "libuv") wheel::bench::run_libuv(o);
    }
  } catch (const std::exception& e) {
    wheel::bench::log_line(std::string("error: ") + e.what());
    return 1;
  }
  if (!o.memory_child)
    wheel::bench::log_line("done in " +
                           std::to_string((wheel::bench::now_ns() - start) / 1'000'000) + " ms");
  return 0;
}
