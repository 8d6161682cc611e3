// SPDX-License-Identifier: Apache-2.0
// Construction options of a wheel::server::LineServer: where to listen, the three idle kinds, the
// wheel, and the per-connection limits. Plain data; validated by Server's constructor.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace wheel::server {

struct ServerMetricsSlot;
struct ServerStats;

struct LineServerOptions {
  // IPv4 or IPv6 address or host name to listen on, or "unix:PATH" (a unix-domain socket:
  // net::TcpServerOptions::host). Loopback by default.
  std::string host = "127.0.0.1";
  // A unix-domain socket's file permissions (<= 0777).
  std::uint32_t unix_mode = 0660;
  // 0 picks a free port; LineServer::port() tells which.
  std::uint16_t port = 7000;
  // Bind with SO_REUSEPORT (a socket created and bound by hand, then uv_tcp_open) so that
  // several worker processes can accept on one port.
  bool reuse_port = false;

  // Netty's IdleStateHandler kinds; 0 disables each.
  // Nothing received for this long: "BYE idle", close.
  std::chrono::milliseconds reader_idle = std::chrono::seconds(30);
  // Nothing written for this long: send "PING" (a server heartbeat).
  std::chrono::milliseconds writer_idle{0};
  // Neither received nor written for this long: "BYE idle", close.
  std::chrono::milliseconds all_idle{0};

  // The hashed wheel: resolution and bucket count (validated by the timer's own rule). 1 ms:
  // closes come within about 1 ms of their due time, and the wheel's worker sleeps while no
  // bucket is due, so idle connections cost it nothing at this tick (docs/benchmarks.md).
  std::chrono::milliseconds tick = std::chrono::milliseconds(1);
  std::size_t wheel_size = 512;

  // Past this many open connections a new client gets "ERR server full" and is closed.
  std::size_t max_connections = 10'000;
  // A line longer than this (without its "\r\n") gets "ERR line too long" and a close.
  std::size_t max_line = 4096;
  // Output queued beyond what the kernel took; past it the client is a slow consumer: closed.
  std::size_t max_output = std::size_t{64} * 1024;
  // Text of the DELAY messages not yet delivered (their bytes, without the "DELAYED " prefix):
  // past either bound a DELAY gets "ERR delayed bytes limit". REQUIRES >= 1.
  std::size_t max_connection_delayed_bytes = std::size_t{1} << 20;  // per connection
  std::size_t max_delayed_bytes = std::size_t{256} << 20;           // per worker, all connections
  // A closed connection that has not read its last replies after this long is reset.
  std::chrono::milliseconds close_grace = std::chrono::seconds(5);
  // Interval of the periodic stats log line; 0 disables it.
  std::chrono::milliseconds stats_interval = std::chrono::seconds(10);
  // Writes the periodic stats line: this worker's counters and the timer's pending timeouts.
  // Called on the loop thread. Unset: an info line "worker N: stats key=value ... " through
  // wheel::logger(). (wheel-server's --log-format json sets one that logs them as JSON fields.)
  std::function<void(const ServerStats& stats, std::uint64_t pending_timeouts)> stats_logger;

  // This worker's index, reported by STATS and in log lines.
  int worker_index = 0;

  // Prometheus metrics (server_metrics.h). Where this server publishes them: a slot of a
  // region shared with a supervisor (which then serves the scrapes; it must outlive the
  // server), or null: a slot of its own when metrics_port is set, else no metrics at all (no
  // per-iteration publishing, no tick-lag observer).
  ServerMetricsSlot* metrics_slot = nullptr;
  // Serve `GET /metrics` on this server's own loop at metrics_host:metrics_port (0 picks a
  // free port: LineServer::metrics_port() tells which); unset: no endpoint.
  std::optional<std::uint16_t> metrics_port;
  std::string metrics_host = "127.0.0.1";
};

}  // namespace wheel::server
