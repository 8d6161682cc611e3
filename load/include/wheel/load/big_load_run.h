// SPDX-License-Identifier: Apache-2.0
// The big case's run (wheel-big-load, scripts/big-load.sh; not in CI), as planned by
// plan_big_load(): wheel-server --workers W on an ephemeral loopback port, then wheel-load
// --processes auto with the plan's rate, sources, idle time and duration. While it runs,
// wheel-load's progress lines pass through to stderr, and within the plan's idle window (all
// connections open, none yet due to close) the server's CPU, RSS and PSS (supervisor and
// workers) and the kernel's Slab and TCP memory are sampled against their values before the load.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "wheel/load/big_load_plan.h"
#include "wheel/load/process_tree.h"

namespace wheel::load {

struct BigLoadPrograms {
  std::string server;  // the wheel-server program
  std::string load;    // the wheel-load program
  std::string report;  // where wheel-load writes its JSON report (--json)
};

// What one run measured. Times are seconds.
struct BigLoadFigures {
  std::size_t connections = 0;
  unsigned workers = 0;
  double connect_rate_asked = 0;
  double server_start_s = 0;  // server start to its "listening on" line
  double load_s = 0;          // wheel-load's run
  double whole_s = 0;         // server start to wheel-load's end
  double server_cpu_s = 0;    // user + system of the server's processes during wheel-load's run
  // When wheel-load's progress first said "connected N/N", from its start.
  std::optional<double> all_open_after_s;
  // The server's processes and the kernel before the load.
  std::uint64_t rss_before_kib = 0, pss_before_kib = 0;
  KernelMemory kernel_before;
  // The idle window; absent when the plan has none (shorter than 5 s) or the run ended first.
  struct Window {
    double seconds = 0;
    double server_cpu_s = 0;  // user + system over the window
    std::uint64_t rss_kib = 0, pss_kib = 0;
    KernelMemory kernel;  // at the window's end
  };
  std::optional<Window> idle;
  int load_status = 1;  // wheel-load's exit status (1 when it could not run or was killed)
};

// Runs it (blocking for the plan's duration and wheel-load's exit), then stops the server with
// SIGTERM and reaps it. Throws std::runtime_error when the server cannot be started or reports
// no port within 30 s (the server is stopped first).
// REQUIRES: plan from plan_big_load(request, ...). Not thread-safe: it forks and waits.
BigLoadFigures run_big_load(const BigLoadRequest& request, const BigLoadPlan& plan,
                            const BigLoadPrograms& programs);

// The summary a human reads, several lines each ending in '\n': the times, the connect rate
// held, then for the idle window the connections open (from the kernel's count of TCP sockets,
// both ends counted, at most N), the server's CPU in ms per second, its memory before and
// during and per connection, and the kernel's; or a line saying there was no idle window.
std::string format_big_load_summary(const BigLoadFigures& figures, const std::string& report);

}  // namespace wheel::load
