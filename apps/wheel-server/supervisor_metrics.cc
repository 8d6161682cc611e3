// SPDX-License-Identifier: Apache-2.0
#include "supervisor_metrics.h"

#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>
#include <utility>

#include "wheel/server/process_metrics.h"

namespace wheel::server {
namespace {

void check(int rc, const char* what) {
  if (rc != 0) throw std::system_error(-rc, std::generic_category(), what);
}

}  // namespace

SupervisorMetrics::SupervisorMetrics(const LineServerOptions& options, ServerMetricsRegion& region,
                                     const sigset_t& signals, const std::size_t& alive,
                                     std::function<std::vector<pid_t>()> workers)
    : region_(region), alive_(alive), workers_(std::move(workers)) {
  check(uv_loop_init(&loop_), "uv_loop_init");
  loop_open_ = true;
  // The signals stay blocked (sigtimedwait takes them); a signalfd only wakes the loop.
  signal_fd_ = ::signalfd(-1, &signals, SFD_NONBLOCK | SFD_CLOEXEC);
  if (signal_fd_ < 0) throw std::system_error(errno, std::generic_category(), "signalfd");
  check(uv_poll_init(&loop_, &signal_poll_, signal_fd_), "uv_poll_init");
  signal_poll_open_ = true;
  check(uv_poll_start(&signal_poll_, UV_READABLE, [](uv_poll_t*, int, int) {}), "uv_poll_start");
  // Restarts and the shutdown deadline are checked at least every 100 ms, as without metrics.
  check(uv_timer_init(&loop_, &tick_), "uv_timer_init");
  tick_open_ = true;
  check(uv_timer_start(
            &tick_, [](uv_timer_t*) {}, 100, 100),
        "uv_timer_start");
  // Last: from here on the destructor closes it.
  endpoint_ = std::make_unique<MetricsHttpServer>(
      &loop_, MetricsHttpOptions{.host = options.metrics_host, .port = *options.metrics_port},
      [this] { return render(); });
}

SupervisorMetrics::~SupervisorMetrics() {
  if (endpoint_) endpoint_->close();
  if (signal_poll_open_) uv_close(reinterpret_cast<uv_handle_t*>(&signal_poll_), nullptr);
  if (tick_open_) uv_close(reinterpret_cast<uv_handle_t*>(&tick_), nullptr);
  if (loop_open_) {
    uv_run(&loop_, UV_RUN_DEFAULT);
    uv_loop_close(&loop_);
  }
  if (signal_fd_ >= 0) ::close(signal_fd_);
}

void SupervisorMetrics::add_descriptors(std::vector<int>* fds) const {
  endpoint_->add_descriptors(fds);
  fds->push_back(signal_fd_);
  fds->push_back(uv_backend_fd(&loop_));
}

void SupervisorMetrics::retire(std::size_t i) {
  const ServerMetricsValues last = region_.slot(i).read();
  retired_.add_counters(last);
  // What it still held died with it: closed as "worker_lost", so that accepted = closed + open
  // stays true. (A clean exit has closed them all: 0.)
  retired_.closed_worker_lost += last.connections_open;
  region_.slot(i).reset();
}

std::string SupervisorMetrics::render() const {
  ServerMetricsValues total = retired_;
  for (std::size_t i = 0; i < region_.size(); ++i) total.add_all(region_.slot(i).read());
  const std::vector<pid_t> pids = workers_();
  return render_server_metrics(total, alive_) + render_process_metrics(sample_process_tree(pids));
}

}  // namespace wheel::server
