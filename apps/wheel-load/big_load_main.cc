// SPDX-License-Identifier: Apache-2.0
// wheel-big-load: the big case (scripts/big-load.sh; not in CI). N connections on this machine
// against wheel-server --workers W under wheel-load --processes auto, 10% active, the rest
// idle and each closed by the server on time. Planned by wheel::load::plan_big_load (its header
// gives the formulas) and run by wheel::load::run_big_load (big_load_run.h): while all
// connections are open and idle it measures the server's CPU and memory and the kernel's,
// against their values before the load. Prints the machine limits that matter first, and
// refuses a run they cannot hold (exit 2). Option parsing and wiring only.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <exception>
#include <fstream>
#include <optional>
#include <string>

#include "cli_options.h"
#include "scenario_main.h"
#include "wheel/load/big_load_plan.h"
#include "wheel/load/big_load_run.h"
#include "wheel/load/process_plan.h"

namespace {

using namespace std::chrono_literals;

// The plan for `request` on this machine, its limits printed first; throws when they cannot
// hold the run (exit 2, like a bad option).
wheel::load::BigLoadPlan plan_on_this_machine(const wheel::load::BigLoadRequest& request) {
  wheel::load::raise_open_file_limit();  // the server and wheel-load inherit it
  const wheel::load::MachineLimits limits = wheel::load::read_machine_limits();
  std::fprintf(stderr,
               "=== machine\ncores %ld; open files per process %llu; ephemeral ports per source "
               "address %llu; fs.file-max %llu (%llu in use)\n",
               sysconf(_SC_NPROCESSORS_ONLN), static_cast<unsigned long long>(limits.open_files),
               static_cast<unsigned long long>(limits.ports),
               static_cast<unsigned long long>(limits.file_max),
               static_cast<unsigned long long>(limits.files_in_use));
  const wheel::load::BigLoadPlan plan = wheel::load::plan_big_load(request, limits);
  std::fprintf(stderr,
               "plan: %zu connections need %u server workers at %llu each; using %u; %llu "
               "descriptors; sources %s\nplan: connect rate %.0f/s (ramp %llds), reader idle "
               "%llds, run %llds, active ratio %g with PING every %llds\n",
               request.connections, plan.workers_needed,
               static_cast<unsigned long long>(plan.per_worker), plan.workers,
               static_cast<unsigned long long>(plan.files_needed), plan.sources.c_str(),
               request.connect_rate, static_cast<long long>(plan.ramp.count()),
               static_cast<long long>(plan.reader_idle.count()),
               static_cast<long long>(plan.duration.count()), request.active_ratio,
               static_cast<long long>(plan.ping_interval.count()));
  return plan;
}

}  // namespace

int main(int argc, char** argv) {
  wheel::load::BigLoadRequest request;
  std::string server_path, load_path, report_path = "big-load-report.json",
                                      summary_path = "big-load-summary.txt";
  std::chrono::milliseconds reader_idle{0}, duration{0}, ping_interval{0};
  unsigned workers = 0;
  const auto add_options = [&](CLI::App& app) {
    wheel::cli::add_existing_file(app, "--server", server_path, "the wheel-server program");
    wheel::cli::add_existing_file(app, "--load", load_path, "the wheel-load program");
    app.add_option("--connections", request.connections, "connections open at once")
        ->check(wheel::cli::integer_range(1000, 2'000'000))
        ->capture_default_str();
    app.add_option("--workers", workers, "server workers (default: planned)")
        ->check(wheel::cli::integer_range(1, 256));
    app.add_option("--connect-rate", request.connect_rate,
                   "connections opened per second (at 10,000 the 1,000,000 run's closes outran "
                   "two cores)")
        ->check(wheel::cli::positive_number(1'000'000))
        ->capture_default_str();
    app.add_option("--active-ratio", request.active_ratio, "share of connections that PING")
        ->check(wheel::cli::number_range(0, 1))
        ->capture_default_str();
    wheel::cli::add_duration(app, "--reader-idle", &reader_idle,
                             "wheel-server's --reader-idle; 0: planned", 0ms, 24h);
    wheel::cli::add_duration(app, "--duration", &duration, "length of the run; 0: planned", 0ms,
                             24h);
    wheel::cli::add_duration(app, "--ping-interval", &ping_interval,
                             "period of an active connection's PING; 0: planned", 0ms, 1h);
    app.add_option("--report", report_path, "wheel-load's JSON report")
        ->type_name(wheel::cli::kTypeFile)
        ->capture_default_str();
    app.add_option("--summary", summary_path, "the summary, also printed on stderr")
        ->type_name(wheel::cli::kTypeFile)
        ->capture_default_str();
  };
  const auto scenario = [&]() -> int {
    const auto secs = [](std::chrono::milliseconds d) -> std::optional<std::chrono::seconds> {
      if (d.count() == 0) return std::nullopt;
      return std::chrono::ceil<std::chrono::seconds>(d);
    };
    request.reader_idle = secs(reader_idle);
    request.duration = secs(duration);
    request.ping_interval = secs(ping_interval);
    if (workers > 0) request.workers = workers;
    wheel::load::BigLoadPlan plan;
    try {
      plan = plan_on_this_machine(request);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "wheel-big-load: %s\n", e.what());
      return 2;
    }
    const wheel::load::BigLoadFigures figures =
        wheel::load::run_big_load(request, plan, {server_path, load_path, report_path});
    const std::string summary = wheel::load::format_big_load_summary(figures, report_path);
    std::fputs(summary.c_str(), stderr);
    std::ofstream(summary_path) << summary;
    return figures.load_status;
  };
  return wheel::apps::scenario_main(
      argc, argv, "wheel-big-load",
      "wheel-big-load: N connections against wheel-server on this machine, planned to its "
      "limits; the server's CPU and memory while all are open and idle",
      add_options, scenario);
}
