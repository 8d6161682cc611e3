// SPDX-License-Identifier: Apache-2.0
// wheel-server: the libuv heartbeat / idle-disconnect server. Option parsing and wiring only:
// the server is wheel::server::LineServer (the line protocol on a TcpServer); --workers N runs N of
// them under the pre-fork supervisor (worker_pool.h).
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <optional>
#include <string>

#include "cli_options.h"
#include "cli_style.h"
#include "idle_options.h"
#include "json_log.h"
#include "wheel/logger.h"
#include "wheel/net/idle_watch.h"
#include "wheel/net/socket_address.h"
#include "wheel/server/line_server.h"
#include "wheel/server/line_server_options.h"
#include "wheel/version.h"
#include "wheel_options.h"
#include "worker_pool.h"

namespace {

using std::chrono::milliseconds;
using wheel::cli::add_count;
using wheel::cli::add_duration;

// The bounds of the options (stated in --help; out of range exits 2 naming the option).
// A line, the output queue and the DELAY text are held in memory per connection; the bounds
// keep a careless value from committing absurd amounts of it (and keep size arithmetic far from
// overflow).
constexpr std::uint64_t kMaxLine = std::uint64_t{1} << 20;          // 1 MiB
constexpr std::uint64_t kMaxOutput = std::uint64_t{1} << 30;        // 1 GiB
constexpr std::uint64_t kMaxConnections = 1'000'000;                // per worker
constexpr std::uint64_t kMaxDelayedBytes = std::uint64_t{1} << 40;  // 1 TiB
constexpr int kMaxWorkers = 256;
// 24 B of bucket per slot committed up front: 2^20 buckets = 24 MiB per worker, which at the
// 1 ms tick already spans 17 minutes per turn (longer delays take rounds).
constexpr std::uint64_t kMaxServerWheelSize = std::uint64_t{1} << 20;
// A tick longer than an hour is of no use to idle detection; with the wheel bound above it
// also keeps tick x wheel size far inside the timer's 292-year limit.
constexpr milliseconds kMaxTick = std::chrono::hours(1);
constexpr milliseconds kMaxStatsInterval = std::chrono::hours(24);

// The end of --help (and of the manual page help2man makes from it): the protocol.
constexpr const char* kProtocolHelp = R"(Protocol: one line per request over TCP, a reply line each.
  PING               PONG
  DELAY MS TEXT      OK now, DELAYED TEXT after MS (1 to 86400000) milliseconds; ERR bad
                     delay, ERR too many delayed messages, ERR delayed bytes limit
  STATS              STATS {json}: this worker's counters
  QUIT               BYE, then the server closes the connection
  anything else      ERR unknown command; a line over --max-line: ERR line too long, close
The server sends PING after --writer-idle without output (a client may answer PONG), BYE idle
before an idle close, ERR server full past --max-connections, BYE shutdown on SIGINT/SIGTERM.
End of input (a half-close) means no more requests: every reply is still delivered.)";

// Exit 2 with `message` on stderr, like CLI11's own errors.
int usage_error(const std::string& message) {
  std::fprintf(stderr, "wheel-server: %s\nRun with --help for more information.\n",
               message.c_str());
  return 2;
}

// Parses the options, then serves: in this process, or through N worker processes.
int run_server(int argc, char** argv) {
  wheel::server::LineServerOptions options;
  int workers = 1;
  std::string log_level = "info";
  std::string log_format = "text";
  std::uint16_t metrics_port = 0;

  CLI::App app{
      "wheel-server: a libuv line server that answers heartbeats and closes idle "
      "connections with a hashed wheel timer"};
  wheel::cli::apply_style(app, "wheel-server", wheel::kVersion);
  app.add_option("--host", options.host,
                 "IPv4 or IPv6 address or host name to listen on, or unix:PATH for a unix-domain "
                 "socket (a stale socket file is replaced, one a server answers on is refused; "
                 "removed at exit; --workers 1 only)")
      ->type_name(wheel::cli::kTypeAddress)
      ->capture_default_str();
  std::string unix_mode = "660";
  app.add_option("--unix-mode", unix_mode,
                 "with --host unix:PATH: the socket file's permissions, octal, 0 to 777")
      ->type_name("MODE")
      ->capture_default_str();
  add_count(app, "--port", &options.port, "TCP port; 0 picks a free one", 0, 65535);
  const auto max_idle = wheel::net::kMaxIdleTime;
  add_duration(app, "--reader-idle", &options.reader_idle,
               "close after this long without input; wheel-load's --expect-idle-close is the "
               "same out of the box, so the two agree",
               milliseconds(0), max_idle);
  add_duration(app, "--writer-idle", &options.writer_idle,
               "send PING after this long without output", milliseconds(0), max_idle);
  add_duration(app, "--all-idle", &options.all_idle,
               "close after this long without input or output; the PINGs of --writer-idle are "
               "output, so it must be below --writer-idle to fire",
               milliseconds(0), max_idle);
  add_duration(app, "--tick", &options.tick, "timer wheel resolution", milliseconds(1), kMaxTick);
  add_count(app, "--wheel-size", &options.wheel_size,
            "timer wheel buckets, rounded up to a power of two; 24 bytes each, committed "
            "up front",
            1, kMaxServerWheelSize);
  add_count(app, "--max-connections", &options.max_connections, "open connections per worker", 1,
            kMaxConnections);
  add_count(app, "--workers", &workers, "worker processes sharing the port (SO_REUSEPORT)", 1,
            kMaxWorkers);
  add_count(app, "--max-line", &options.max_line, "longest accepted line in bytes", 1, kMaxLine);
  add_count(app, "--max-output", &options.max_output,
            "output bytes queued per connection before it is closed as a slow consumer", 1,
            kMaxOutput);
  add_count(app, "--max-connection-delayed-bytes", &options.max_connection_delayed_bytes,
            "text bytes of one connection's pending DELAY messages; past it "
            "\"ERR delayed bytes limit\"",
            1, kMaxDelayedBytes);
  add_count(app, "--max-delayed-bytes", &options.max_delayed_bytes,
            "text bytes of all pending DELAY messages of a worker; past it "
            "\"ERR delayed bytes limit\"",
            1, kMaxDelayedBytes);
  add_count(app, "--metrics-port", &metrics_port,
            "serve Prometheus metrics at http://METRICS-HOST:PORT/metrics (with --workers, "
            "summed over the workers by the supervisor); 0 turns it off",
            0, 65535);
  app.add_option("--metrics-host", options.metrics_host,
                 "IPv4 or IPv6 address or host name of the metrics endpoint")
      ->type_name(wheel::cli::kTypeAddress)
      ->capture_default_str();
  add_duration(app, "--close-grace", &options.close_grace,
               "a closed connection that has not read its last replies after this long is "
               "reset",
               milliseconds(0), max_idle);
  add_duration(app, "--stats-interval", &options.stats_interval,
               "period of the stats log line; 0 disables it", milliseconds(0), kMaxStatsInterval);
  wheel::cli::add_logging_options(app, log_level, log_format);
  app.footer(kProtocolHelp);

  if (const auto exit_status = wheel::cli::parse_command_line(app, argc, argv, "wheel-server")) {
    return *exit_status;  // --help, --version, or a usage error already printed
  }
  const wheel::apps::IdleCheck idle =
      wheel::apps::check_idle_options(options.reader_idle, options.writer_idle, options.all_idle);
  if (!idle.error.empty()) return usage_error(idle.error);
  if (!idle.warning.empty())
    std::fprintf(stderr, "wheel-server: warning: %s\n", idle.warning.c_str());
  if (const std::string bad = wheel::apps::check_wheel_options(options.tick, options.wheel_size);
      !bad.empty()) {
    return usage_error(bad);
  }
  try {
    wheel::net::resolve_address(options.host, options.port);
  } catch (const std::exception& e) {
    return usage_error("--host: " + std::string(e.what()));
  }
  if (const std::optional<std::uint32_t> mode = wheel::apps::parse_unix_mode(unix_mode)) {
    options.unix_mode = *mode;
  } else {
    return usage_error("--unix-mode: must be an octal mode from 0 to 777, got '" + unix_mode + "'");
  }
  if (workers > 1 && wheel::net::is_unix_host(options.host)) {
    return usage_error("--host unix:PATH: one process only (--workers 1): SO_REUSEPORT is TCP's");
  }
  if (metrics_port != 0) {
    try {
      wheel::net::resolve_address(options.metrics_host, metrics_port);
    } catch (const std::exception& e) {
      return usage_error("--metrics-host: " + std::string(e.what()));
    }
    options.metrics_port = metrics_port;
  }

  // Logs go to stderr: stdout carries only the "listening on" line that scripts read.
  wheel::apps::install_program_logger("wheel-server", log_level, log_format);
  if (log_format == "json") {
    // The stats as fields of the JSON line ({"connections":3,...}), not a key=value string.
    options.stats_logger = [](const wheel::server::ServerStats& stats,
                              std::uint64_t pending_timeouts) {
      std::string fields = stats.to_json();  // an object: add one more key before its '}'
      fields.insert(fields.size() - 1, ",\"pending_timeouts\":" + std::to_string(pending_timeouts));
      wheel::apps::log_with_fields(spdlog::level::info,
                                   "worker " + std::to_string(stats.worker) + ": stats", fields);
    };
  }

  if (workers > 1) {
    wheel::apps::set_log_worker(-1);  // the supervisor; each worker sets its index
    return wheel::server::run_workers(std::move(options), workers);
  }
  try {
    wheel::server::LineServer server(options);
    std::uint16_t port = 0;
    try {
      port = server.listen();
    } catch (const wheel::server::MetricsListenError& e) {
      wheel::logger()->error("wheel-server: {}", e.what());
      return 1;
    } catch (const std::exception& e) {  // e.g. "listen (EADDRINUSE): Address already in use"
      wheel::logger()->error("wheel-server: cannot listen on {}: {}",
                             wheel::net::format_host_port(options.host, options.port), e.what());
      return 1;
    }
    server.handle_signals();
    std::printf("listening on %s\n", wheel::net::format_host_port(options.host, port).c_str());
    std::fflush(stdout);
    server.run();
    return 0;
  } catch (const std::exception& e) {
    wheel::logger()->error("wheel-server: {}", e.what());
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run_server(argc, argv);
  } catch (const std::exception& e) {  // not expected: run_server() handles its own errors
    std::fprintf(stderr, "wheel-server: %s\n", e.what());
    return 1;
  }
}
