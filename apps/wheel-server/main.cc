// wheel-server: the libuv heartbeat / idle-disconnect server. Option parsing and wiring only:
// the server is wheel::net::Server (the line protocol on a TcpServer); --workers N runs N of
// them under the pre-fork supervisor (worker_pool.h).
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <exception>
#include <string>

#include "duration.h"
#include "wheel/net/idle_watch.h"
#include "wheel/net/server.h"
#include "wheel/net/server_options.h"
#include "wheel/net/socket_address.h"
#include "wheel_options.h"
#include "worker_pool.h"

namespace {

using wheel::apps::parse_duration;

// A CLI11 option holding a duration such as 250ms, 30s, 5m, 1h, or 0, at most `max`.
CLI::Option* add_duration(CLI::App& app, const std::string& name, std::chrono::milliseconds* out,
                          const std::string& help,
                          std::chrono::milliseconds max = std::chrono::milliseconds::max()) {
  return app
      .add_option_function<std::string>(
          name, [out](const std::string& text) { *out = *parse_duration(text); },
          help + " (default " + wheel::apps::format_duration(*out) + ")")
      ->type_name("DURATION")
      ->check(CLI::Validator(
          [max](std::string& text) -> std::string {
            const auto d = parse_duration(text);
            if (!d) return wheel::apps::duration_error(text);
            if (*d > max) return "must be at most " + std::to_string(max.count()) + "ms";
            return {};
          },
          ""));
}

// Exit 2 with `message` on stderr, like CLI11's own errors.
int usage_error(const std::string& message) {
  std::fprintf(stderr, "%s\nRun with --help for more information.\n", message.c_str());
  return 2;
}

// Parses the options, then serves: in this process, or through N worker processes.
int run_server(int argc, char** argv) {
  wheel::net::ServerOptions options;
  int workers = 1;
  std::string log_level = "info";

  CLI::App app{
      "wheel-server: a libuv line server that answers heartbeats and closes idle "
      "connections with a hashed wheel timer"};
  app.add_option("--host", options.host, "IPv4 or IPv6 address or host name to listen on")
      ->capture_default_str();
  app.add_option("--port", options.port, "TCP port; 0 picks a free one")->capture_default_str();
  const auto max_idle = wheel::net::kMaxIdleTime;
  add_duration(app, "--reader-idle", &options.reader_idle, "close after this long without input",
               max_idle);
  add_duration(app, "--writer-idle", &options.writer_idle,
               "send PING after this long without output", max_idle);
  add_duration(app, "--all-idle", &options.all_idle,
               "close after this long without input or output", max_idle);
  add_duration(app, "--tick", &options.tick, "timer wheel resolution, at least 1ms")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            const auto d = parse_duration(text);
            return d && d->count() >= 1 ? std::string() : "must be at least 1ms";
          },
          ""));
  app.add_option("--wheel-size", options.wheel_size, "timer wheel buckets (power of two)")
      ->check(CLI::Range(std::size_t{1}, wheel::apps::kMaxWheelSize))
      ->capture_default_str();
  app.add_option("--max-connections", options.max_connections, "open connections per worker")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--workers", workers, "worker processes sharing the port (SO_REUSEPORT)")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--max-line", options.max_line, "longest accepted line in bytes")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--max-output", options.max_output,
                 "output bytes queued per connection before "
                 "it is closed as a slow consumer")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  add_duration(app, "--stats-interval", &options.stats_interval, "period of the stats log line");
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error, critical or off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}))
      ->capture_default_str();

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);  // --help
  } catch (const CLI::ParseError& e) {
    app.exit(e);  // prints the message naming the option
    return 2;
  }
  if (const std::string bad = wheel::apps::check_wheel_options(options.tick, options.wheel_size);
      !bad.empty()) {
    return usage_error(bad);
  }
  try {
    wheel::net::resolve_address(options.host, options.port);
  } catch (const std::exception& e) {
    return usage_error("--host: " + std::string(e.what()));
  }

  // Logs go to stderr: stdout carries only the "listening on" line that scripts read.
  spdlog::set_default_logger(spdlog::stderr_color_mt("wheel-server"));
  spdlog::set_level(spdlog::level::from_str(log_level));

  if (workers > 1) return wheel::server::run_workers(std::move(options), workers);
  try {
    wheel::net::Server server(options);
    const std::uint16_t port = server.listen();
    server.handle_signals();
    std::printf("listening on %s\n", wheel::net::format_host_port(options.host, port).c_str());
    std::fflush(stdout);
    server.run();
    return 0;
  } catch (const std::exception& e) {
    spdlog::error("wheel-server: {}", e.what());
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
