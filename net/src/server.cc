// SPDX-License-Identifier: Apache-2.0
#include "wheel/net/server.h"

#include <spdlog/spdlog.h>

#include "wheel/logger.h"

#include <stdexcept>
#include <string>

#include "line_protocol.h"
#include "line_protocol_handler.h"
#include "wheel/net/socket_address.h"
#include "wheel/net/tcp_server.h"

namespace wheel::net {
namespace {

TcpServerOptions tcp_options(const ServerOptions& o) {
  if (o.reader_idle.count() < 0 || o.writer_idle.count() < 0 || o.all_idle.count() < 0 ||
      o.stats_interval.count() < 0) {
    throw std::invalid_argument("durations must not be negative");
  }
  if (o.max_connection_delayed_bytes == 0 || o.max_delayed_bytes == 0) {
    throw std::invalid_argument("delayed bytes limits must be positive");
  }
  TcpServerOptions t;
  t.host = o.host;
  t.port = o.port;
  t.reuse_port = o.reuse_port;
  t.max_connections = o.max_connections;
  t.idle = IdleTimes{o.reader_idle, o.writer_idle, o.all_idle};
  t.framing = Framing::kLines;
  t.max_line = o.max_line;
  t.max_output = o.max_output;
  t.timer.tick_duration = o.tick;
  t.timer.ticks_per_wheel = o.wheel_size;
  t.timer.thread_name = "wheel-timer-" + std::to_string(o.worker_index);
  return t;
}

}  // namespace

// The handler before the server: the server's destructor still calls it.
struct Server::Parts {
  explicit Parts(const ServerOptions& o)
      : options(o),
        handler(o.worker_index, o.stats_interval,
                DelayLimits{kMaxDelayedPerConnection, o.max_connection_delayed_bytes,
                            o.max_delayed_bytes}),
        server(tcp_options(o), handler) {
    handler.attach(server);
  }
  ServerOptions options;
  LineProtocolHandler handler;
  TcpServer server;
};

Server::Server(ServerOptions options) : parts_(std::make_unique<Parts>(options)) {}
Server::~Server() = default;

std::uint16_t Server::listen() {
  const std::uint16_t port = parts_->server.listen();
  const ServerOptions& o = parts_->options;
  wheel::logger()->info(
      "worker {}: listening on {} (reader-idle {} ms, writer-idle {} ms, all-idle {} ms, "
      "tick {} ms, wheel {})",
      o.worker_index, format_host_port(o.host, port), o.reader_idle.count(), o.writer_idle.count(),
      o.all_idle.count(),
      std::chrono::duration_cast<std::chrono::milliseconds>(parts_->server.timer().tick_duration())
          .count(),
      parts_->server.timer().ticks_per_wheel());
  return port;
}

void Server::handle_signals() {
  parts_->server.handle_signals();
}

ServerStats Server::run() {
  parts_->server.run();
  ServerStats final_stats = parts_->handler.snapshot();
  wheel::logger()->info("worker {}: stopped; final counters: {}", parts_->options.worker_index,
                        final_stats.to_log_string());
  return final_stats;
}

void Server::shutdown() {
  parts_->server.shutdown();
}

std::uint16_t Server::port() const {
  return parts_->server.port();
}

}  // namespace wheel::net
