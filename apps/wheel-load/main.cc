// wheel-load: opens many long-lived connections to a PING/PONG line server, keeps a share of
// them alive with heartbeats, and checks that the server closes exactly the silent ones, on
// time. Option parsing and wiring only; the logic is in wheel::load (load/).
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <charconv>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>

#include "wheel/load/address_range.h"
#include "wheel/load/duration.h"
#include "wheel/load/fanout.h"
#include "wheel/load/process_plan.h"
#include "wheel/load/report.h"

namespace {

constexpr int kExitUsage = 2;

int usage_error(const std::string& message) {
  std::fprintf(stderr, "wheel-load: %s\n", message.c_str());
  return kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  using wheel::load::parse_duration;
  CLI::App app{"wheel-load: many long-lived connections against an idle-disconnect line server"};
  std::string host = "127.0.0.1";
  int port = 7000;
  std::size_t connections = 10'000;
  double active_ratio = 0.5;
  std::string ping_interval = "1s", expect_idle_close = "5s", tolerance = "1s", duration = "20s";
  double connect_rate = 5000;
  std::string source_addresses = "127.0.0.1-127.0.0.8";
  std::string processes = "auto";
  std::string json_path;
  std::string log_level = "info";
  std::uint64_t seed = 1;
  double delay_share = 0, slow_share = 0, garbage_share = 0;
  std::string delay = "500ms";
  std::size_t slow_burst = 32, churn = 0;
  double churn_rate = 0;
  app.add_option("--host", host, "server IPv4 address")->capture_default_str();
  app.add_option("--port", port, "server port")->check(CLI::Range(1, 65535))->capture_default_str();
  app.add_option("--connections", connections, "connections to open")
      ->check(CLI::Range(std::size_t{1}, std::size_t{10'000'000}))
      ->capture_default_str();
  app.add_option("--active-ratio", active_ratio, "share of connections that send PING (0..1)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--ping-interval", ping_interval, "PING period of active connections, e.g. 1s")
      ->capture_default_str();
  app.add_option("--expect-idle-close", expect_idle_close,
                 "when the server should close a silent connection; 0: never")
      ->capture_default_str();
  app.add_option("--tolerance", tolerance, "how late an idle close may be")->capture_default_str();
  app.add_option("--duration", duration, "length of the run")->capture_default_str();
  app.add_option("--connect-rate", connect_rate, "connections opened per second (whole run)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--source-addresses", source_addresses,
                 "local IPv4 addresses to bind: a range A-B or a comma list (default for a "
                 "non-loopback --host: 0.0.0.0, any)")
      ->capture_default_str();
  app.add_option("--processes", processes, "processes to split the run over: a number or auto")
      ->capture_default_str();
  app.add_option("--json", json_path, "write the report as JSON to this file");
  app.add_option("--seed", seed, "seed of the PING jitter")->capture_default_str();
  app.add_option("--delay-share", delay_share,
                 "share of active connections that send DELAY instead of PING and check that "
                 "DELAYED comes back on time (0..1)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--delay", delay, "the delay of their DELAY commands")->capture_default_str();
  app.add_option("--slow-share", slow_share,
                 "share of active connections that send bursts of PINGs and read the PONGs "
                 "slowly (about 5 KB/s) (0..1)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--slow-burst", slow_burst, "PINGs per burst of a slow reader")
      ->check(CLI::Range(std::size_t{1}, wheel::load::kMaxSlowBurst))
      ->capture_default_str();
  app.add_option("--garbage-share", garbage_share,
                 "share of active connections that send unknown commands and expect 'ERR "
                 "unknown command' (0..1)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--churn", churn,
                 "short connections open at a time, each cycling connect, PING, QUIT (every "
                 "4th: reset) for the whole run; 0: none")
      ->check(CLI::Range(std::size_t{0}, std::size_t{10'000}))
      ->capture_default_str();
  app.add_option("--churn-rate", churn_rate, "churn cycles per second at most")
      ->check(CLI::Range(0.0, 100'000.0))
      ->capture_default_str();
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error, off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}))
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitUsage;
  }

  auto logger = spdlog::stderr_color_mt("wheel-load");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(log_level));

  wheel::load::LoadConfig config;
  try {
    config.host = wheel::load::parse_ipv4(host);
  } catch (const std::exception& e) {
    return usage_error(std::string("--host: ") + e.what());
  }
  config.port = static_cast<std::uint16_t>(port);
  config.connections = connections;
  config.share = connections;
  config.active_ratio = active_ratio;
  config.connect_rate = connect_rate;
  config.seed = seed;
  config.delay_share = delay_share;
  config.slow_share = slow_share;
  config.garbage_share = garbage_share;
  config.slow_burst = slow_burst;
  config.churn = churn;
  config.churn_rate = churn_rate;
  if (delay_share + slow_share + garbage_share > 1.0) {
    return usage_error("--delay-share, --slow-share and --garbage-share add up to more than 1");
  }
  if (churn > 0 && churn_rate <= 0) return usage_error("--churn needs a --churn-rate above 0");
  const std::pair<const char*, std::pair<std::string*, std::chrono::milliseconds*>> durations[] = {
      {"--ping-interval", {&ping_interval, &config.ping_interval}},
      {"--expect-idle-close", {&expect_idle_close, &config.expect_idle_close}},
      {"--tolerance", {&tolerance, &config.tolerance}},
      {"--duration", {&duration, &config.duration}},
      {"--delay", {&delay, &config.delay}}};
  for (const auto& [name, target] : durations) {
    try {
      *target.second = parse_duration(*target.first);
    } catch (const std::exception& e) {
      return usage_error(std::string(name) + ": " + e.what());
    }
  }
  if (config.duration.count() == 0) return usage_error("--duration must be more than 0");
  if (config.ping_interval.count() == 0 && active_ratio > 0) {
    return usage_error("--ping-interval must be more than 0 when --active-ratio is above 0");
  }
  // The default source range is loopback's; a remote server is reached from any local address.
  if (app.count("--source-addresses") == 0 && (config.host >> 24) != 127) {
    source_addresses = "0.0.0.0";
  }
  try {
    config.source_addresses = wheel::load::parse_source_addresses(source_addresses);
  } catch (const std::exception& e) {
    return usage_error(std::string("--source-addresses: ") + e.what());
  }

  std::optional<unsigned> requested;
  if (processes != "auto") {
    unsigned n = 0;
    const auto [end, ec] =
        std::from_chars(processes.data(), processes.data() + processes.size(), n);
    if (ec != std::errc() || end != processes.data() + processes.size()) {
      return usage_error("--processes: expected a number or auto, not '" + processes + "'");
    }
    requested = n;
  }
  const std::uint64_t fd_limit = wheel::load::raise_open_file_limit();
  wheel::load::ProcessPlan plan;
  try {
    plan = wheel::load::plan_processes(connections + churn, requested, fd_limit);
  } catch (const std::exception& e) {
    return usage_error(e.what());
  }
  config.processes = plan.processes;

  // An idle connection opened late must still have time to be closed and judged.
  const double connect_s = static_cast<double>(connections) / connect_rate;
  const double needed_s =
      connect_s + static_cast<double>((config.expect_idle_close + config.tolerance).count()) / 1e3;
  if (config.expect_idle_close.count() > 0 && active_ratio < 1 &&
      needed_s > static_cast<double>(config.duration.count()) / 1e3) {
    spdlog::warn(
        "--duration {} is shorter than opening every connection ({:.1f} s) plus "
        "--expect-idle-close plus --tolerance ({:.1f} s): the last idle connections will count "
        "as never closed",
        duration, connect_s, needed_s);
  }
  // connect()'s ephemeral-port search slows as one address fills up, stalling the loop.
  const std::size_t per_address = connections / config.source_addresses.size();
  if (per_address > 5000) {
    spdlog::warn(
        "{} connections per source address: connect() gets slow past ~5,000 per address (the "
        "kernel's port search) and delays this process's loop; add --source-addresses",
        per_address);
  }
  spdlog::info(
      "wheel-load: {} connections to {}:{} ({:.0f}% active), {} process(es) (open-file limit "
      "{}), {} source address(es), {}/s, for {}",
      connections, host, port, active_ratio * 100, plan.processes, fd_limit,
      config.source_addresses.size(), connect_rate, duration);

  // A peer that closes while we write must not kill us with SIGPIPE: libuv reports EPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  const wheel::load::LoadResult result = wheel::load::run_load(config, plan.processes);
  const nlohmann::json report = wheel::load::make_report(result, config);
  std::cout << wheel::load::format_summary(report) << std::flush;
  if (!json_path.empty()) {
    std::ofstream out(json_path);
    out << report.dump(2) << "\n";
    if (!out) {
      spdlog::error("wheel-load: cannot write --json {}", json_path);
      return 1;
    }
  }
  return report["ok"].get<bool>() ? 0 : 1;
}
