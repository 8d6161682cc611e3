// wheel-server: the libuv heartbeat / idle-disconnect server. Option parsing and wiring only;
// the server is wheel::net (net/).
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <exception>
#include <string>

#include "wheel/net/duration.h"
#include "wheel/net/server.h"
#include "wheel/net/server_options.h"
#include "wheel/net/worker_pool.h"

namespace {

// A CLI11 option holding a duration such as 250ms, 30s, 5m, 1h, or 0.
CLI::Option* add_duration(CLI::App& app, const std::string& name, std::chrono::milliseconds* out,
                          const std::string& help) {
  return app
      .add_option_function<std::string>(
          name, [out](const std::string& text) { *out = *wheel::net::parse_duration(text); },
          help + " (default " + wheel::net::format_duration(*out) + ")")
      ->type_name("DURATION")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            if (wheel::net::parse_duration(text)) return {};
            return "expected a duration such as 500ms, 30s, 5m, 1h, or 0, got '" + text + "'";
          },
          ""));
}

// Parses the options, then serves: in this process, or through N worker processes.
int run_server(int argc, char** argv) {
  wheel::net::ServerOptions options;
  int workers = 1;
  std::string log_level = "info";

  CLI::App app{
      "wheel-server: a libuv line server that answers heartbeats and closes idle "
      "connections with a hashed wheel timer"};
  app.add_option("--host", options.host, "numeric address to listen on")->capture_default_str();
  app.add_option("--port", options.port, "TCP port; 0 picks a free one")->capture_default_str();
  add_duration(app, "--reader-idle", &options.reader_idle, "close after this long without input");
  add_duration(app, "--writer-idle", &options.writer_idle,
               "send PING after this long without output");
  add_duration(app, "--all-idle", &options.all_idle,
               "close after this long without input or output");
  add_duration(app, "--tick", &options.tick, "timer wheel resolution, at least 1ms")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            const auto d = wheel::net::parse_duration(text);
            return d && d->count() >= 1 ? std::string() : "must be at least 1ms";
          },
          ""));
  app.add_option("--wheel-size", options.wheel_size, "timer wheel buckets (power of two)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 30))
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

  // Logs go to stderr: stdout carries only the "listening on" line that scripts read.
  spdlog::set_default_logger(spdlog::stderr_color_mt("wheel-server"));
  spdlog::set_level(spdlog::level::from_str(log_level));

  if (workers > 1) return wheel::net::run_workers(std::move(options), workers);
  try {
    wheel::net::Server server(options);
    const std::uint16_t port = server.listen();
    server.handle_signals();
    std::printf("listening on %s:%u\n", options.host.c_str(), static_cast<unsigned>(port));
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
