// SPDX-License-Identifier: Apache-2.0
// wheel-idle-bench: the cost of an idle timeout per read with N simulated connections (no
// sockets), for one implementation per process: wheel (IdleDetector on a LoopTimer), libuv
// (uv_timer_again per read), asio (steady_timer::expires_after per read; when built with Boost).
// Netty's IdleStateHandler is bench/netty/NettyIdlePerRead.java. JSON lines on stdout; see
// per_read_driver.h for the phases and scripts/compare-idle-per-read.sh for the comparison.
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench_report.h"
#include "cli_style.h"
#include "impls.h"
#include "wheel/version.h"

int main(int argc, char** argv) {
  using wheel::cli::integer_range;
  using wheel::cli::number_range;
  wheel::bench::PerReadParams p;
  std::string impl = "wheel";
  std::vector<std::string> impls = {"wheel", "libuv"};
#ifdef WHEEL_HAVE_ASIO
  impls.emplace_back("asio");
#endif
  CLI::App app{"wheel-idle-bench: the cost of an idle timeout per read, N simulated connections"};
  wheel::cli::apply_style(app, "wheel-idle-bench", wheel::kVersion);
  app.add_option("--impl", impl, "wheel, libuv or asio (asio when built with Boost)")
      ->check(wheel::cli::one_of(impls));
  app.add_option("--n", p.n, "simulated connections (default 1000000)")
      ->check(integer_range(1, 20'000'000));
  app.add_option("--idle-ms", p.idle_ms, "reader idle time per connection, ms (default 10000)")
      ->check(integer_range(10, 3'600'000));
  app.add_option("--idle-secs", p.idle_secs, "seconds of the idle-CPU window (default 5)")
      ->check(number_range(0.1, 600));
  app.add_option("--read-secs", p.read_secs, "seconds of the paced-read phase (default 10)")
      ->check(number_range(0.1, 600));
  app.add_option("--rate", p.rate, "reads per second in the paced phase (default 200000)")
      ->check(integer_range(1, 100'000'000));
  app.add_option("--tight-reads", p.tight_reads, "back-to-back reads, 0 to skip (default 1000000)")
      ->check(integer_range(0, 1'000'000'000));
  app.add_option("--tick", p.tick_ms, "the wheel's tick in ms (wheel only; default 1)")
      ->check(integer_range(1, 1'000));
  app.add_option("--seed", p.seed, "seed of the connection sequence (default 42)");
  if (const auto exit_status =
          wheel::cli::parse_command_line(app, argc, argv, "wheel-idle-bench")) {
    return *exit_status;
  }
  // The idle phase must end before the first deadline, or it measures closes, not idleness.
  const double idle_phase =
      p.idle_secs + wheel::bench::kIdleSettleSecs + wheel::bench::kIdleTailSecs;
  if (idle_phase * 1000 >= double(p.idle_ms)) {
    std::cerr << "wheel-idle-bench: --idle-secs (" << p.idle_secs << " s) plus "
              << wheel::bench::kIdleSettleSecs + wheel::bench::kIdleTailSecs
              << " s must be shorter than --idle-ms (" << p.idle_ms << " ms)\n";
    return 2;
  }
  try {
    wheel::bench::run_per_read(p, [&]() -> wheel::bench::PerReadImpl* {
#ifdef WHEEL_HAVE_ASIO
      if (impl == "asio") return wheel::bench::make_asio_per_read(p);
#endif
      if (impl == "libuv") return wheel::bench::make_libuv_per_read(p);
      return wheel::bench::make_wheel_per_read(p);
    });
  } catch (const std::exception& e) {
    std::cerr << "wheel-idle-bench: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
