// SPDX-License-Identifier: Apache-2.0
// Internal to wheel-server: the supervisor's scrape endpoint (--metrics-port with --workers).
// A libuv loop of its own that the supervisor runs between signals. A scrape sums the workers'
// shared slots and the counters that dead workers left (see server_metrics.h); it never asks a
// worker anything.
#pragma once

#include <signal.h>
#include <sys/types.h>
#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "wheel/server/line_server_options.h"
#include "wheel/server/metrics_http_server.h"
#include "wheel/server/server_metrics.h"

namespace wheel::server {

class SupervisorMetrics {
 public:
  // Serves options.metrics_host:*options.metrics_port from `region`'s slots; `signals` (kept
  // blocked by the caller) wake run_once(); `alive` is the supervisor's count of live workers,
  // read at each scrape; `workers` lists the pids of the workers not yet reaped (0 or -1 for an
  // empty place), for the process_* metrics of the whole tree (process_metrics.h). Throws
  // std::system_error when a libuv or signalfd call fails.
  SupervisorMetrics(const LineServerOptions& options, ServerMetricsRegion& region,
                    const sigset_t& signals, const std::size_t& alive,
                    std::function<std::vector<pid_t>()> workers);
  ~SupervisorMetrics();
  SupervisorMetrics(const SupervisorMetrics&) = delete;
  SupervisorMetrics& operator=(const SupervisorMetrics&) = delete;

  // Starts listening; returns the port. Throws as MetricsHttpServer::listen().
  std::uint16_t listen() { return endpoint_->listen(); }
  // Appends the descriptors a forked worker must close (a scrape must never reach a worker).
  void add_descriptors(std::vector<int>* fds) const;
  // Serves scrapes until a signal is pending or 100 ms have passed.
  void run_once() { uv_run(&loop_, UV_RUN_ONCE); }
  // Worker `i` died: keeps its counters (not its gauges), counts the connections it still held
  // as closed with reason "worker_lost", and clears its slot for the next one.
  void retire(std::size_t i);

 private:
  std::string render() const;

  ServerMetricsRegion& region_;
  const std::size_t& alive_;
  std::function<std::vector<pid_t>()> workers_;
  ServerMetricsValues retired_;  // counters of dead workers
  uv_loop_t loop_{};
  bool loop_open_ = false;
  std::unique_ptr<MetricsHttpServer> endpoint_;
  int signal_fd_ = -1;
  uv_poll_t signal_poll_{};
  bool signal_poll_open_ = false;
  uv_timer_t tick_{};
  bool tick_open_ = false;
};

}  // namespace wheel::server
