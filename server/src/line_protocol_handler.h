// SPDX-License-Identifier: Apache-2.0
// Internal: LineProtocolHandler, wheel-server's protocol (PING/PONG/DELAY/STATS/QUIT, idle
// closes and heartbeats; see docs/wheel-server.md) as a net::ConnectionHandler, built only on the
// public pieces: net::TcpServer, net::Connection, net::LoopTimer, the idle events. Loop thread
// only.
#pragma once

#include <uv.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <utility>

#include "wheel/net/connection_handler.h"
#include "wheel/net/tcp_server.h"
#include "wheel/server/server_metrics.h"
#include "wheel/server/server_stats.h"
#include "wheel/timeout.h"

namespace wheel::server {

// Bounds of the DELAY messages not yet delivered; over any of them a DELAY is refused.
struct DelayLimits {
  std::size_t count_per_connection = 1000;                  // "ERR too many delayed messages"
  std::size_t bytes_per_connection = std::size_t{1} << 20;  // "ERR delayed bytes limit"
  std::size_t bytes_per_worker = std::size_t{256} << 20;    // "ERR delayed bytes limit"
};

class LineProtocolHandler final : public net::ConnectionHandler {
 public:
  // `metrics`: where to publish this worker's Prometheus metrics (null: nowhere); it must
  // outlive the handler.
  LineProtocolHandler(int worker_index, std::chrono::milliseconds stats_interval,
                      DelayLimits delay_limits = {}, ServerMetricsSlot* metrics = nullptr);
  LineProtocolHandler(const LineProtocolHandler&) = delete;
  LineProtocolHandler& operator=(const LineProtocolHandler&) = delete;

  // Binds the handler to its server, starts the periodic stats line and, with a metrics slot,
  // the publishing of the metrics at the end of every loop iteration (a uv_check handle: a
  // few dozen relaxed stores per iteration, no work per event) and once a second. Throws
  // std::system_error when a libuv handle cannot start. Call once, before the loop runs.
  void attach(net::TcpServer& server);
  // Where the periodic stats line goes (LineServerOptions::stats_logger); empty: the text line.
  // Before attach().
  void set_stats_logger(std::function<void(const ServerStats&, std::uint64_t)> logger) {
    stats_logger_ = std::move(logger);
  }

  // This worker's counters: the server's and the protocol's. Loop thread only.
  ServerStats snapshot() const;
  // Stores the current counters into the metrics slot (if any). Loop thread only.
  void publish_metrics() const;
  // Also runs `hook` when the shutdown begins (to close more loop handles). Loop thread only.
  void set_shutdown_hook(std::function<void()> hook) { shutdown_hook_ = std::move(hook); }

  void on_line(net::Connection& c, std::string_view line) override;
  void on_line_too_long(net::Connection& c) override;
  void on_input_end(net::Connection& c) override;
  void on_idle(net::Connection& c, net::IdleEvent event) override;
  void on_close(net::Connection& c, net::CloseReason reason) override;
  // The output of a connection paused by on_line (half of max_output queued) is down to a
  // quarter: it reads again.
  void on_output_below(net::Connection& c) override;
  std::string_view reject_line() override { return "ERR server full\n"; }
  std::string_view goodbye() override { return "BYE shutdown\n"; }
  void on_shutdown() override;

 private:
  struct Pending;  // a connection's DELAY messages (its context, made on the first DELAY)
  struct DelayedTask;

  void schedule_delayed(net::Connection& c, std::uint64_t delay_ms, std::string_view text);
  void on_delayed(std::uint64_t id, net::LoopTimer::Handle fired, std::string_view text);
  void refuse_delay(net::Connection& c, std::string_view why);
  void log_stats() const;
  void observe_idle_close(const net::Connection& c, net::IdleKind kind);

  const int worker_index_;
  const std::chrono::milliseconds stats_interval_;
  std::function<void(const ServerStats&, std::uint64_t)> stats_logger_;
  const DelayLimits delay_limits_;
  net::TcpServer* server_ = nullptr;
  uv_timer_t stats_timer_;
  bool stats_timer_open_ = false;
  std::uint64_t idle_closed_ = 0;
  std::uint64_t pings_ = 0;
  std::uint64_t heartbeats_ = 0;
  std::uint64_t delayed_pending_ = 0;
  std::uint64_t delayed_sent_ = 0;
  std::uint64_t delayed_bytes_ = 0;  // text of the pending DELAYs, every connection
  std::uint64_t delayed_refused_ = 0;
  std::uint64_t errors_ = 0;
  std::uint64_t stale_delayed_ = 0;
  std::array<std::uint64_t, net::kCloseReasonCount> closed_{};
  ServerMetricsSlot* const metrics_;
  std::function<void()> shutdown_hook_;
  uv_check_t publish_check_;
  bool publish_check_open_ = false;
  // Publishes once a second as well, so that gauges are at most a second stale on an idle
  // loop.
  uv_timer_t publish_timer_;
  bool publish_timer_open_ = false;
};

}  // namespace wheel::server
