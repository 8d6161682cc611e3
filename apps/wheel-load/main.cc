// SPDX-License-Identifier: Apache-2.0
// wheel-load: opens many long-lived connections to a PING/PONG line server, keeps a share of
// them alive with heartbeats, and checks that the server closes exactly the silent ones, on
// time. Option parsing and wiring only; the logic is in wheel::load (load/).
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "cli_options.h"
#include "cli_style.h"
#include "duration.h"
#include "json_log.h"
#include "wheel/load/address_range.h"
#include "wheel/load/fanout.h"
#include "wheel/load/host_address.h"
#include "wheel/load/process_plan.h"
#include "wheel/load/report.h"
#include "wheel/load/report_file.h"
#include "wheel/load/report_html.h"
#include "wheel/load/server_metrics_check.h"
#include "wheel/load/stop_signals.h"
#include "wheel/logger.h"
#include "wheel/version.h"

namespace {

constexpr int kExitUsage = 2;

int usage_error(const std::string& message) {
  std::fprintf(stderr, "wheel-load: %s\n", message.c_str());
  return kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  using wheel::cli::add_duration;
  using wheel::cli::integer_range;
  using wheel::cli::number_range;
  CLI::App app{"wheel-load: many long-lived connections against an idle-disconnect line server"};
  wheel::cli::apply_style(app, "wheel-load", wheel::kVersion);
  wheel::load::LoadConfig config;
  // The defaults agree with wheel-server's: it closes a silent connection after --reader-idle
  // 30s, so that is what is expected, and the run is long enough to see it (connect 2 s +
  // 30 s + tolerance 1 s < 35 s).
  config.expect_idle_close = 30s;
  config.duration = 35s;
  std::string host = "127.0.0.1";
  int port = 7000;
  std::size_t connections = 10'000;
  std::string source_addresses = "127.0.0.1-127.0.0.8";
  std::string processes = "auto";
  std::string json_path;
  std::string html_path;
  std::string log_level = "info";
  std::string metrics_url;
  bool metrics_exclusive = false;
  std::string log_format = "text";
  std::string answer_heartbeats = "active";
  app.add_option("--host", host,
                 "server: a host name (resolved; its IPv4 address first) or a numeric IPv4 or "
                 "IPv6 address (::1 or [::1])")
      ->type_name(wheel::cli::kTypeAddress)
      ->capture_default_str();
  app.add_option("--port", port, "server port")
      ->check(integer_range(1, 65535))
      ->capture_default_str();
  app.add_option("--connections", connections, "long-lived connections to open")
      ->check(integer_range(1, 10'000'000))
      ->capture_default_str();
  app.add_option("--active-ratio", config.active_ratio,
                 "share of connections that are active (send PING, or the mix below)")
      ->check(number_range(0, 1))
      ->capture_default_str();
  add_duration(app, "--ping-interval", &config.ping_interval,
               "period of an active connection's PING (or DELAY, burst, unknown command)", 0ms, 1h);
  add_duration(app, "--expect-idle-close", &config.expect_idle_close,
               "when the server should close a silent connection; 0: never. The default is "
               "wheel-server's default --reader-idle, so the two agree",
               0ms, 24h);
  add_duration(app, "--tolerance", &config.tolerance,
               "how late an idle close or a DELAYED line may be", 0ms, 1h);
  add_duration(app, "--duration", &config.duration,
               "length of the run; idle connections whose close is not yet due at its end are "
               "reported as not yet due, not as failures",
               0ms, 24h);
  app.add_option("--connect-rate", config.connect_rate, "connections opened per second")
      ->check(wheel::cli::positive_number(1'000'000))
      ->capture_default_str();
  app.add_option("--source-addresses", source_addresses,
                 "local IPv4 addresses to bind, a range A-B or a comma list; for a non-loopback "
                 "or IPv6 --host the default is whatever address the kernel picks")
      ->type_name(wheel::cli::kTypeAddress)
      ->capture_default_str();
  app.add_option("--processes", processes, "processes to split the run over: a number or auto")
      ->type_name(wheel::cli::kTypeText)
      ->capture_default_str();
  app.add_option("--json", json_path,
                 "write the report as JSON to this file (checked before the run starts)")
      ->type_name(wheel::cli::kTypeFile);
  app.add_option("--html", html_path,
                 "write the report as one self-contained HTML page (the verdict, histograms of "
                 "close times and round trips, connections over time) to this file (checked "
                 "before the run starts)")
      ->type_name(wheel::cli::kTypeFile);
  app.add_option("--seed", config.seed, "seed of the PING jitter")
      ->check(integer_range(0, std::numeric_limits<std::int64_t>::max()))
      ->capture_default_str();
  app.add_option("--delay-share", config.delay_share,
                 "share of active connections that send DELAY and check that DELAYED comes back "
                 "on time")
      ->check(number_range(0, 1))
      ->capture_default_str();
  add_duration(app, "--delay", &config.delay, "the delay of their DELAY commands", 1ms, 24h);
  app.add_option("--slow-share", config.slow_share,
                 "share of active connections that send bursts of PINGs and read the PONGs "
                 "slowly (about 5 KB/s)")
      ->check(number_range(0, 1))
      ->capture_default_str();
  app.add_option("--slow-burst", config.slow_burst, "PINGs per burst of a slow reader")
      ->check(integer_range(1, wheel::load::kMaxSlowBurst))
      ->capture_default_str();
  app.add_option("--garbage-share", config.garbage_share,
                 "share of active connections that send unknown commands and expect 'ERR "
                 "unknown command'")
      ->check(number_range(0, 1))
      ->capture_default_str();
  app.add_option("--churn", config.churn,
                 "short connections at a time, each cycling connect, PING, QUIT (every 4th: "
                 "reset) for the whole run; 0: none")
      ->check(integer_range(0, 10'000))
      ->capture_default_str();
  app.add_option("--churn-rate", config.churn_rate, "churn cycles per second at most")
      ->check(number_range(0, 100'000))
      ->capture_default_str();
  app.add_option("--answer-heartbeats", answer_heartbeats,
                 "which connections answer the server's heartbeat PINGs (wheel-server "
                 "--writer-idle) with PONG: active, all or none. An idle connection that "
                 "answered would no longer be idle to the server")
      ->type_name(wheel::cli::kTypeText)
      ->check(CLI::IsMember({"active", "all", "none"}))
      ->capture_default_str();
  app.add_option("--metrics-url", metrics_url,
                 "the server's Prometheus endpoint (http://HOST:PORT/metrics, wheel-server "
                 "--metrics-port): scraped before and after the run, its counts of the run are "
                 "printed beside wheel-load's and must agree (else exit 1)")
      ->type_name("URL");
  app.add_flag("--metrics-exclusive", metrics_exclusive,
               "wheel-load is the server's only client during the run: the counts must be "
               "equal, not just at least wheel-load's");
  wheel::cli::add_logging_options(app, log_level, log_format);
  if (const auto exit_status = wheel::cli::parse_command_line(app, argc, argv, "wheel-load")) {
    return *exit_status;
  }

  // "worker" is 0 in JSON lines: wheel-load's child processes log through this logger too.
  wheel::apps::install_program_logger("wheel-load", log_level, log_format);

  try {
    config.host = wheel::load::resolve_host(host);
  } catch (const std::exception& e) {
    return usage_error(std::string("--host: ") + e.what());
  }
  config.port = static_cast<std::uint16_t>(port);
  using Heartbeats = wheel::load::LoadConfig::Heartbeats;
  config.answer_heartbeats = answer_heartbeats == "all"    ? Heartbeats::kAll
                             : answer_heartbeats == "none" ? Heartbeats::kNone
                                                           : Heartbeats::kActive;
  config.connections = connections;
  config.share = connections;
  if (config.delay_share + config.slow_share + config.garbage_share > 1.0) {
    return usage_error("--delay-share, --slow-share and --garbage-share add up to more than 1");
  }
  if (config.churn > 0 && config.churn_rate <= 0) {
    return usage_error("--churn needs a --churn-rate above 0");
  }
  if (config.duration.count() == 0) return usage_error("--duration must be more than 0");
  if (config.ping_interval.count() == 0 && config.active_ratio > 0) {
    return usage_error("--ping-interval must be more than 0 when --active-ratio is above 0");
  }
  // The default source range is loopback's; a remote or IPv6 server is reached from any local
  // address the kernel picks.
  const bool sources_given = app.count("--source-addresses") > 0;
  if (config.host.ipv6 && sources_given) {
    return usage_error("--source-addresses: IPv4 source addresses cannot reach the IPv6 --host " +
                       config.host.to_string());
  }
  config.source_addresses.clear();
  if (sources_given || (!config.host.ipv6 && config.host.is_loopback())) {
    try {
      config.source_addresses = wheel::load::parse_source_addresses(source_addresses);
    } catch (const std::exception& e) {
      return usage_error(std::string("--source-addresses: ") + e.what());
    }
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
    plan = wheel::load::plan_processes(connections + config.churn, requested, fd_limit);
  } catch (const std::exception& e) {
    return usage_error(e.what());
  }
  config.processes = plan.processes;

  // From here the first SIGINT or SIGTERM stops the run (one that comes before it starts ends
  // it at once), which still reports; a second one ends wheel-load at once and removes the
  // unfinished report. Installed before the report file exists, so no signal can leave it.
  try {
    wheel::load::install_stop_signals();
  } catch (const std::exception& e) {
    wheel::logger()->error("wheel-load: {}", e.what());
    return 1;
  }

  // Every output is opened before the first connection: a bad path costs nothing.
  // The report is written whole or not at all (a temporary file renamed over --json), so a
  // run stopped at any moment never leaves a truncated file.
  std::optional<wheel::load::ReportFile> json_out;
  if (!json_path.empty()) {
    try {
      json_out.emplace(json_path);
      wheel::load::remove_on_abort(json_out->temporary_path().c_str());
    } catch (const std::exception& e) {
      return usage_error(std::string("--json: ") + e.what());
    }
  }
  std::optional<wheel::load::ReportFile> html_out;
  if (!html_path.empty()) {
    if (html_path == json_path) return usage_error("--html: the same file as --json: " + html_path);
    try {
      html_out.emplace(html_path);
      wheel::load::remove_on_abort(html_out->temporary_path().c_str());
    } catch (const std::exception& e) {
      return usage_error(std::string("--html: ") + e.what());
    }
  }

  // The server's counters before the run: the comparison is of what it counted during it.
  std::optional<wheel::load::MetricsUrl> scrape_url;
  wheel::load::MetricSamples metrics_before;
  if (!metrics_url.empty()) {
    try {
      scrape_url = wheel::load::parse_metrics_url(metrics_url);
    } catch (const std::exception& e) {
      return usage_error(std::string("--metrics-url: ") + e.what());
    }
    try {
      metrics_before = wheel::load::scrape(*scrape_url, 10s);
    } catch (const std::exception& e) {
      return usage_error("--metrics-url: cannot scrape " + metrics_url + ": " + e.what());
    }
  } else if (metrics_exclusive) {
    return usage_error("--metrics-exclusive needs --metrics-url");
  }

  // An idle connection opened late must still have time to be closed and judged.
  const double connect_s = static_cast<double>(connections) / config.connect_rate;
  const double needed_s =
      connect_s + static_cast<double>((config.expect_idle_close + config.tolerance).count()) / 1e3;
  if (config.expect_idle_close.count() > 0 && config.active_ratio < 1 &&
      needed_s > static_cast<double>(config.duration.count()) / 1e3) {
    wheel::logger()->warn(
        "--duration {} is shorter than opening every connection ({:.1f} s) plus "
        "--expect-idle-close plus --tolerance ({:.1f} s): idle connections not yet due to be "
        "closed at the end are reported as not yet due, unchecked",
        wheel::apps::format_duration(config.duration), connect_s, needed_s);
  }
  // connect()'s ephemeral-port search slows as one address fills up, stalling the loop.
  if (!config.source_addresses.empty() && connections / config.source_addresses.size() > 5000) {
    wheel::logger()->warn(
        "{} connections per source address: connect() gets slow past ~5,000 per address (the "
        "kernel's port search) and delays this process's loop; add --source-addresses",
        connections / config.source_addresses.size());
  }
  wheel::logger()->info(
      "wheel-load: {} connections to {}:{} ({} as given) ({:.0f}% active), {} process(es) "
      "(open-file limit {}), {} source address(es), {}/s, for {}",
      connections, config.host.to_string(), port, host, config.active_ratio * 100, plan.processes,
      fd_limit, config.source_addresses.size(), config.connect_rate,
      wheel::apps::format_duration(config.duration));

  // A peer that closes while we write must not kill us with SIGPIPE: libuv reports EPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  wheel::load::ProgressTimeline timeline;  // for --html's connections over time
  const wheel::load::LoadResult result = wheel::load::run_load(
      config, plan.processes, [&timeline](const wheel::load::Progress& p) { timeline.add(p); });
  nlohmann::json report = wheel::load::make_report(result, config);
  const std::string summary = wheel::load::format_summary(report);
  std::cout << summary << std::flush;
  bool metrics_agree = true;
  if (scrape_url && result.interrupted_by != 0) {
    // A stopped run's counts are partial on both sides; comparing them proves nothing.
    report["server_metrics"] = {{"url", metrics_url}, {"skipped", "the run was interrupted"}};
  } else if (scrape_url) {
    // The server may still be closing the run's last connections: scrape until the counts
    // agree, for a few seconds at most.
    nlohmann::json comparison;
    const auto give_up = std::chrono::steady_clock::now() + 5s;
    for (;;) {
      try {
        comparison = wheel::load::compare_with_server(
            result, metrics_before, wheel::load::scrape(*scrape_url, 10s), metrics_exclusive);
      } catch (const std::exception& e) {
        comparison = {{"exclusive", metrics_exclusive},
                      {"agree", false},
                      {"error", e.what()},
                      {"rows", nlohmann::json::array()}};
      }
      if (comparison["agree"].get<bool>() || std::chrono::steady_clock::now() > give_up) break;
      std::this_thread::sleep_for(100ms);
    }
    comparison["url"] = metrics_url;
    metrics_agree = comparison["agree"].get<bool>();
    if (comparison.contains("error")) {
      wheel::logger()->error("wheel-load: --metrics-url {}: {}", metrics_url,
                             comparison["error"].get<std::string>());
    }
    std::cout << wheel::load::format_comparison(comparison) << std::flush;
    report["server_metrics"] = comparison;
  }
  if (json_out) {
    try {
      json_out->commit(report.dump(2) + "\n");
    } catch (const std::exception& e) {
      wheel::logger()->error("wheel-load: --json: {}", e.what());
      return 1;
    }
  }
  if (html_out) {
    try {
      html_out->commit(wheel::load::format_html_report(report, summary, result, timeline.points()));
    } catch (const std::exception& e) {
      wheel::logger()->error("wheel-load: --html: {}", e.what());
      return 1;
    }
  }
  // Stopped by a signal: the shell's convention, 128 + the signal, says so.
  if (result.interrupted_by != 0) return 128 + result.interrupted_by;
  return report["ok"].get<bool>() && metrics_agree ? 0 : 1;
}
