// SPDX-License-Identifier: Apache-2.0
#include "wheel/server/line_server.h"

#include <spdlog/spdlog.h>

#include "wheel/logger.h"

#include <uv.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <system_error>

#include "line_protocol.h"
#include "line_protocol_handler.h"
#include "wheel/net/socket_address.h"
#include "wheel/net/tcp_server.h"
#include "wheel/server/metrics_http_server.h"
#include "wheel/server/process_metrics.h"
#include "wheel/server/server_metrics.h"

namespace wheel::server {
namespace {

net::TcpServerOptions tcp_options(const LineServerOptions& o, ServerMetricsSlot* metrics) {
  if (o.reader_idle.count() < 0 || o.writer_idle.count() < 0 || o.all_idle.count() < 0 ||
      o.stats_interval.count() < 0) {
    throw std::invalid_argument("durations must not be negative");
  }
  if (o.max_connection_delayed_bytes == 0 || o.max_delayed_bytes == 0) {
    throw std::invalid_argument("delayed bytes limits must be positive");
  }
  net::TcpServerOptions t;
  t.host = o.host;
  t.port = o.port;
  t.unix_mode = o.unix_mode;
  t.reuse_port = o.reuse_port;
  t.max_connections = o.max_connections;
  t.idle = net::IdleTimes{o.reader_idle, o.writer_idle, o.all_idle};
  t.framing = net::Framing::kLines;
  t.max_line = o.max_line;
  t.max_output = o.max_output;
  t.close_grace = o.close_grace;
  t.timer.tick_duration = o.tick;
  t.timer.ticks_per_wheel = o.wheel_size;
  t.timer.thread_name = "wheel-timer-" + std::to_string(o.worker_index);
  if (metrics != nullptr) {
    t.timer.tick_observer = [metrics](std::chrono::nanoseconds lag) {
      metrics->tick_lag.observe(lag);  // on the loop thread, this histogram's one writer
    };
  }
  return t;
}

}  // namespace

MetricsListenError MetricsListenError::from(const std::string& host, std::uint16_t port,
                                            const std::system_error& cause) {
  return MetricsListenError("cannot serve metrics on " + net::format_host_port(host, port) + ": " +
                            cause.code().message() + " (" + uv_err_name(-cause.code().value()) +
                            ")");
}

struct LineServerParts {
  explicit LineServerParts(const LineServerOptions& o)
      : options(o),
        own_metrics(o.metrics_slot == nullptr && o.metrics_port
                        ? std::make_unique<ServerMetricsRegion>(1)
                        : nullptr),
        metrics(o.metrics_slot != nullptr ? o.metrics_slot
                : own_metrics             ? &own_metrics->slot(0)
                                          : nullptr),
        handler(o.worker_index, o.stats_interval,
                DelayLimits{kMaxDelayedPerConnection, o.max_connection_delayed_bytes,
                            o.max_delayed_bytes},
                metrics) {
    handler.set_stats_logger(o.stats_logger);
  }
  LineServerOptions options;
  std::unique_ptr<ServerMetricsRegion> own_metrics;
  ServerMetricsSlot* metrics;
  std::unique_ptr<MetricsHttpServer> endpoint;  // made by listen(), closed by the shutdown
  std::atomic<std::uint16_t> endpoint_port{0};
  LineProtocolHandler handler;
};

LineServerPartsOwner::LineServerPartsOwner(const LineServerOptions& options)
    : parts_(std::make_unique<LineServerParts>(options)) {}
LineServerPartsOwner::~LineServerPartsOwner() = default;

LineServer::LineServer(LineServerOptions options)
    : LineServerPartsOwner(options),
      net::TcpServer(tcp_options(parts_->options, parts_->metrics), parts_->handler) {
  parts_->handler.attach(*this);
}
LineServer::~LineServer() = default;

std::uint16_t LineServer::listen() {
  const std::uint16_t port = net::TcpServer::listen();
  const LineServerOptions& o = parts_->options;
  if (o.metrics_port) {
    LineServerParts& p = *parts_;
    p.endpoint = std::make_unique<MetricsHttpServer>(
        loop(), MetricsHttpOptions{.host = o.metrics_host, .port = *o.metrics_port}, [&p] {
          p.handler.publish_metrics();  // this iteration's counters too
          return render_server_metrics(p.metrics->read(), 1) +
                 render_process_metrics(read_process_sample(0).value_or(ProcessSample{}));
        });
    p.handler.set_shutdown_hook([&p] { p.endpoint->close(); });
    std::uint16_t metrics_port = 0;
    try {
      metrics_port = p.endpoint->listen();
    } catch (const std::system_error& e) {
      // The address once, the cause once: "... on 127.0.0.1:9100: Address already in use
      // (EADDRINUSE)".
      throw MetricsListenError::from(o.metrics_host, *o.metrics_port, e);
    }
    p.endpoint_port.store(metrics_port, std::memory_order_release);
    wheel::logger()->info("worker {}: metrics on http://{}/metrics", o.worker_index,
                          net::format_host_port(o.metrics_host, metrics_port));
  }
  wheel::logger()->info(
      "worker {}: listening on {} (reader-idle {} ms, writer-idle {} ms, all-idle {} ms, "
      "tick {} ms, wheel {})",
      o.worker_index, net::format_host_port(o.host, port), o.reader_idle.count(),
      o.writer_idle.count(), o.all_idle.count(),
      std::chrono::duration_cast<std::chrono::milliseconds>(timer().tick_duration()).count(),
      timer().ticks_per_wheel());
  return port;
}

ServerStats LineServer::run() {
  net::TcpServer::run();
  parts_->handler.publish_metrics();  // the closes of the shutdown
  ServerStats final_stats = parts_->handler.snapshot();
  wheel::logger()->info("worker {}: stopped; final counters: {}", parts_->options.worker_index,
                        final_stats.to_log_string());
  return final_stats;
}

std::uint16_t LineServer::metrics_port() const {
  return parts_->endpoint_port.load(std::memory_order_acquire);
}

}  // namespace wheel::server
