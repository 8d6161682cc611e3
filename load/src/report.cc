// SPDX-License-Identifier: Apache-2.0
#include "wheel/load/report.h"

#include <fmt/format.h>

#include <cmath>
#include <csignal>

#include "wheel/load/address_range.h"
#include "wheel/load/percentiles.h"
#include "wheel/load/percentiles_json.h"

namespace wheel::load {
namespace {

// A client stall this long is worth a line in the summary.
constexpr double kStallWorthSayingMs = 500;

// "SIGINT", "SIGTERM", else "signal N".
std::string signal_name(int sig) {
  if (sig == SIGINT) return "SIGINT";
  if (sig == SIGTERM) return "SIGTERM";
  return fmt::format("signal {}", sig);
}

std::string ms_text(const nlohmann::json& p) {
  if (p["p50"].is_null()) return "no samples";
  return fmt::format("p50 {:.2f} p90 {:.2f} p99 {:.2f} max {:.2f} ms (n={})",
                     p["p50"].get<double>(), p["p90"].get<double>(), p["p99"].get<double>(),
                     p["max"].get<double>(), p["count"].get<std::size_t>());
}

}  // namespace

const char* to_string(LoadConfig::Heartbeats h) {
  switch (h) {
    case LoadConfig::Heartbeats::kNone:
      return "none";
    case LoadConfig::Heartbeats::kActive:
      return "active";
    case LoadConfig::Heartbeats::kAll:
      return "all";
  }
  return "?";
}

std::vector<std::string> failed_expectations(const LoadResult& r, const LoadConfig& config) {
  std::vector<std::string> failures;
  // Why the run ended early comes first: it explains most of what follows.
  if (r.interrupted_by != 0) {
    failures.push_back(
        fmt::format("interrupted by {} after {:.1f} s: the figures cover the run "
                    "until then",
                    signal_name(r.interrupted_by), r.duration_s));
  }
  if (!r.gave_up.empty()) failures.push_back("gave up: " + r.gave_up);
  if (r.server_shutdown_at_s >= 0) {
    failures.push_back(fmt::format(
        "the server shut down {:.1f} s into the run (BYE shutdown): it closed {} active and {} "
        "idle connections",
        r.server_shutdown_at_s, r.active_closed_by_shutdown, r.idle_closed_by_shutdown));
  }
  if (r.connect_errors > 0 || r.connections_established < r.connections_requested) {
    std::string kinds;
    for (const auto& [kind, n] : r.connect_errors_by_kind) {
      kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", kind, n);
    }
    failures.push_back(fmt::format("{} of {} connections were not established ({})",
                                   r.connections_requested - r.connections_established,
                                   r.connections_requested, kinds.empty() ? "?" : kinds));
  }
  if (r.active_closed_early > 0) {
    failures.push_back(fmt::format("{} of {} active connections did not survive to the end",
                                   r.active_closed_early, r.active_count));
  }
  // One PING per connection may still be in flight when the run ends.
  if (r.pings_sent > r.pongs_received + r.active_count) {
    failures.push_back(
        fmt::format("{} of {} PINGs got no PONG", r.pings_sent - r.pongs_received, r.pings_sent));
  }
  if (config.expect_idle_close.count() > 0) {
    if (r.idle_closed_early > 0) {
      failures.push_back(fmt::format("{} of {} idle connections were closed early",
                                     r.idle_closed_early, r.idle_count));
    }
    if (r.idle_closed_late > 0) {
      failures.push_back(fmt::format("{} of {} idle connections were closed late",
                                     r.idle_closed_late, r.idle_count));
    }
    if (r.idle_never_closed > 0) {
      failures.push_back(fmt::format("{} of {} idle connections were never closed",
                                     r.idle_never_closed, r.idle_count));
    }
  } else if (r.idle_closed_early > 0) {
    failures.push_back(fmt::format(
        "{} of {} idle connections were closed, but --expect-idle-close 0 expects none closed",
        r.idle_closed_early, r.idle_count));
  }
  if (r.unexpected_lines > 0) {
    failures.push_back(fmt::format("{} unexpected lines from the server", r.unexpected_lines));
  }
  const std::pair<std::uint64_t, const char*> delay_faults[] = {
      {r.delayed_early, "early"}, {r.delayed_late, "late"}, {r.delayed_missing, "never"}};
  for (const auto& [n, how] : delay_faults) {
    if (n > 0) {
      failures.push_back(
          fmt::format("{} of {} DELAY messages were delivered {}", n, r.delays_sent, how));
    }
  }
  if (r.delays_acknowledged < r.delays_sent) {
    failures.push_back(fmt::format("{} of {} DELAY commands got no OK",
                                   r.delays_sent - r.delays_acknowledged, r.delays_sent));
  }
  if (r.garbage_rejected < r.garbage_sent) {
    failures.push_back(fmt::format("{} of {} unknown commands got no 'ERR unknown command'",
                                   r.garbage_sent - r.garbage_rejected, r.garbage_sent));
  }
  if (r.slow_pongs_received < r.slow_pings_sent) {
    failures.push_back(fmt::format("slow readers got {} of their {} PONGs", r.slow_pongs_received,
                                   r.slow_pings_sent));
  }
  if (r.churn_failed > 0) {
    failures.push_back(
        fmt::format("{} of {} churn cycles failed", r.churn_failed, r.churn_started));
  }
  if (config.churn > 0 && config.churn_rate > 0 && r.churn_completed == 0) {
    failures.push_back("no churn cycle completed");
  }
  return failures;
}

nlohmann::json make_report(const LoadResult& r, const LoadConfig& config) {
  const auto failures = failed_expectations(r, config);
  nlohmann::json j;
  j["connections_requested"] = r.connections_requested;
  j["connections_established"] = r.connections_established;
  j["connect_errors"] = r.connect_errors;
  j["connect_errors_by_kind"] = r.connect_errors_by_kind;
  j["active"] = {{"count", r.active_count},
                 {"survived", r.active_survived},
                 {"closed_early", r.active_closed_early},
                 {"closed_by_shutdown", r.active_closed_by_shutdown}};
  j["idle"] = {{"count", r.idle_count},
               {"closed_on_time", r.idle_closed_on_time},
               {"closed_early", r.idle_closed_early},
               {"closed_late", r.idle_closed_late},
               {"never_closed", r.idle_never_closed},
               {"not_yet_due", r.idle_not_yet_due},
               {"closed_by_shutdown", r.idle_closed_by_shutdown},
               {"lateness_ms", percentiles_json(summarize(r.idle_lateness_ms))}};
  j["delay"] = {{"sent", r.delays_sent},
                {"acknowledged", r.delays_acknowledged},
                {"on_time", r.delayed_on_time},
                {"early", r.delayed_early},
                {"late", r.delayed_late},
                {"missing", r.delayed_missing},
                {"not_yet_due", r.delayed_not_yet_due},
                {"lateness_ms", percentiles_json(summarize(r.delayed_lateness_ms))}};
  j["garbage"] = {{"sent", r.garbage_sent}, {"rejected", r.garbage_rejected}};
  j["slow_readers"] = {{"pings_sent", r.slow_pings_sent},
                       {"pongs_received", r.slow_pongs_received}};
  j["churn"] = {{"started", r.churn_started},
                {"established", r.churn_established},
                {"completed", r.churn_completed},
                {"failed", r.churn_failed},
                {"interrupted", r.churn_interrupted}};
  j["rtt_ms"] = percentiles_json(summarize(r.rtt_ms));
  j["connect_ms"] = percentiles_json(summarize(r.connect_ms));
  j["pings_sent"] = r.pings_sent;
  j["pongs_received"] = r.pongs_received;
  j["bye_idle_received"] = r.bye_idle_received;
  j["heartbeats"] = {{"received", r.heartbeats_received}, {"answered", r.heartbeats_answered}};
  j["interrupted"] = r.interrupted_by == 0
                         ? nlohmann::json(nullptr)
                         : nlohmann::json{{"signal", signal_name(r.interrupted_by)},
                                          {"after_s", std::round(r.duration_s * 1000.0) / 1000.0}};
  j["gave_up"] = r.gave_up.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.gave_up);
  j["server_shutdown"] =
      r.server_shutdown_at_s < 0
          ? nlohmann::json(nullptr)
          : nlohmann::json{{"at_s", std::round(r.server_shutdown_at_s * 1000.0) / 1000.0},
                           {"active_closed", r.active_closed_by_shutdown},
                           {"idle_closed", r.idle_closed_by_shutdown}};
  j["unexpected_lines"] = r.unexpected_lines;
  j["io_errors"] = r.io_errors;
  j["peak_open"] = r.peak_open;
  j["duration_s"] = std::round(r.duration_s * 1000.0) / 1000.0;
  j["max_loop_stall_ms"] = std::round(r.max_loop_stall_ms);
  j["ok"] = failures.empty();
  j["failures"] = failures;
  j["settings"] = {{"host", config.host.to_string()},
                   {"port", config.port},
                   {"active_ratio", config.active_ratio},
                   {"ping_interval_ms", config.ping_interval.count()},
                   {"expect_idle_close_ms", config.expect_idle_close.count()},
                   {"tolerance_ms", config.tolerance.count()},
                   {"duration_ms", config.duration.count()},
                   {"source_addresses", config.source_addresses.size()},
                   {"processes", r.processes},
                   {"delay_share", config.delay_share},
                   {"slow_share", config.slow_share},
                   {"garbage_share", config.garbage_share},
                   {"delay_ms", config.delay.count()},
                   {"slow_burst", config.slow_burst},
                   {"churn", config.churn},
                   {"churn_rate", config.churn_rate},
                   {"answer_heartbeats", to_string(config.answer_heartbeats)}};
  return j;
}

std::string format_summary(const nlohmann::json& j) {
  const auto& s = j["settings"];
  const auto& a = j["active"];
  const auto& i = j["idle"];
  std::string out = fmt::format(
      "wheel-load report: {}:{}, {} connections ({:g}% active) from {} process(es) over {}, "
      "{:.1f} s\n",
      s["host"].get<std::string>(), s["port"].get<int>(), j["connections_requested"].get<long>(),
      s["active_ratio"].get<double>() * 100, s["processes"].get<int>(),
      s["source_addresses"].get<long>() == 0
          ? std::string("source addresses the kernel chose")
          : fmt::format("{} source address(es)", s["source_addresses"].get<long>()),
      j["duration_s"].get<double>());
  out += fmt::format(
      "  connections: {} established, {} connect errors, peak {} open at once; connect {}\n",
      j["connections_established"].get<long>(), j["connect_errors"].get<long>(),
      j["peak_open"].get<long>(), ms_text(j["connect_ms"]));
  out += fmt::format(
      "  active: {} established, {} survived, {} closed early; {} PINGs, {} PONGs; rtt {}\n",
      a["count"].get<long>(), a["survived"].get<long>(), a["closed_early"].get<long>(),
      j["pings_sent"].get<long>(), j["pongs_received"].get<long>(), ms_text(j["rtt_ms"]));
  out += fmt::format(
      "  idle (expected close after {} ms, tolerance {} ms): {} established, {} closed on time, {} "
      "early, {} late, {} never closed, {} not yet due; lateness {}\n",
      s["expect_idle_close_ms"].get<long>(), s["tolerance_ms"].get<long>(), i["count"].get<long>(),
      i["closed_on_time"].get<long>(), i["closed_early"].get<long>(), i["closed_late"].get<long>(),
      i["never_closed"].get<long>(), i["not_yet_due"].get<long>(), ms_text(i["lateness_ms"]));
  if (i["not_yet_due"].get<long>() > 0) {
    out += fmt::format(
        "    {} idle connections were not yet due to be closed when the run ended (not a "
        "failure; run longer than --expect-idle-close plus --tolerance to check them)\n",
        i["not_yet_due"].get<long>());
  }
  if (const auto& sd = j["server_shutdown"]; !sd.is_null()) {
    out += fmt::format(
        "  server shutdown after {:.1f} s (BYE shutdown): {} active and {} idle connections "
        "closed by it, counted apart and not judged\n",
        sd["at_s"].get<double>(), sd["active_closed"].get<long>(), sd["idle_closed"].get<long>());
  }
  const auto& d = j["delay"];
  if (d["sent"].get<long>() > 0) {
    out += fmt::format(
        "  DELAY: {} sent, {} OK, {} delivered on time, {} early, {} late, {} missing, {} not "
        "yet due; lateness {}\n",
        d["sent"].get<long>(), d["acknowledged"].get<long>(), d["on_time"].get<long>(),
        d["early"].get<long>(), d["late"].get<long>(), d["missing"].get<long>(),
        d["not_yet_due"].get<long>(), ms_text(d["lateness_ms"]));
  }
  if (j["garbage"]["sent"].get<long>() > 0 || j["slow_readers"]["pings_sent"].get<long>() > 0) {
    out += fmt::format(
        "  garbage: {} unknown commands, {} rejected; slow readers: {} PINGs, {} PONGs read\n",
        j["garbage"]["sent"].get<long>(), j["garbage"]["rejected"].get<long>(),
        j["slow_readers"]["pings_sent"].get<long>(),
        j["slow_readers"]["pongs_received"].get<long>());
  }
  const auto& ch = j["churn"];
  if (ch["started"].get<long>() > 0) {
    out += fmt::format(
        "  churn: {} cycles started, {} established, {} completed, {} failed, {} interrupted by "
        "the end\n",
        ch["started"].get<long>(), ch["established"].get<long>(), ch["completed"].get<long>(),
        ch["failed"].get<long>(), ch["interrupted"].get<long>());
  }
  out += fmt::format(
      "  server lines: {} BYE idle, {} heartbeat PINGs ({} answered), {} unexpected; {} I/O "
      "errors\n",
      j["bye_idle_received"].get<long>(), j["heartbeats"]["received"].get<long>(),
      j["heartbeats"]["answered"].get<long>(), j["unexpected_lines"].get<long>(),
      j["io_errors"].get<long>());
  if (j["max_loop_stall_ms"].get<double>() >= kStallWorthSayingMs) {
    out += fmt::format(
        "  note: this client's own loop stalled for up to {:.0f} ms (an overloaded machine?): "
        "lateness and closes of active connections in this run may be the client's doing\n",
        j["max_loop_stall_ms"].get<double>());
  }
  if (j["ok"].get<bool>()) {
    out += "  result: OK\n";
  } else {
    out += "  result: FAILED\n";
    for (const auto& f : j["failures"]) out += "    - " + f.get<std::string>() + "\n";
  }
  return out;
}

}  // namespace wheel::load
