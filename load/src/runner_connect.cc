// SPDX-License-Identifier: Apache-2.0
// RunnerCore: opening the long-lived connections at the configured rate, from the source
// addresses, and counting what fails.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "runner_core.h"

#include "wheel/logger.h"

namespace wheel::load {
namespace {

// How long connects may all fail, none ever succeeding, before the run gives up.
constexpr double kGiveUpAfterMs = 1000;

}  // namespace

void RunnerCore::on_connect_tick(uv_timer_t* t) {
  auto* self = static_cast<RunnerCore*>(t->data);
  // Paced by elapsed time, not by tick count, so a stalled loop catches up instead of drifting.
  const double due = self->now_ms() / 1000.0 * self->cfg_.connect_rate + 1;
  const std::size_t target = std::min<std::size_t>(self->cfg_.share, static_cast<std::size_t>(due));
  while (self->next_to_open_ < target && !self->ending_) self->open(self->next_to_open_++);
  if (self->next_to_open_ == self->cfg_.share) uv_timer_stop(t);
  // Failures that went on long enough give up here when no new one comes to say so.
  if (self->first_failure_ms_ >= 0 && !self->ending_) self->maybe_give_up();
}

void RunnerCore::open(std::size_t local) {
  Connection& c = conns_[local];
  c.runner = this;
  c.local_index = static_cast<std::uint32_t>(local);
  const std::size_t global = cfg_.first_index + local;
  c.role = role_of(global, cfg_);
  c.active = c.role != Role::kIdle;
  if (int e = start_connect(c, global)) connect_failed(c, e);
}

// Creates, binds and connects c's socket from the source address of `address_index`.
// Returns 0, or a libuv error code (the handle, if made, is closed by the caller's path).
int RunnerCore::start_connect(Connection& c, std::size_t address_index) {
  c.tcp.data = &c;
  c.connect_req.data = &c;
  c.state = ConnState::kConnecting;

  // The socket is made here, not by libuv, to set IP_BIND_ADDRESS_NO_PORT before bind: the
  // port is then chosen at connect time per (source, destination) pair, so each source address
  // offers its whole ephemeral range to every server port instead of once in all.
  const int family = cfg_.host.ipv6 ? AF_INET6 : AF_INET;
  const int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return uv_translate_sys_error(errno);
  if (c.role == Role::kSlowReader) {
    // A small receive buffer, so the server's output backs up after a little, not megabytes.
    const int rcvbuf = 4096;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  }
  if (!cfg_.host.ipv6 && !cfg_.source_addresses.empty()) {
    const int one = 1;
    setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
    sockaddr_in src{};
    src.sin_family = AF_INET;
    src.sin_addr.s_addr =
        htonl(cfg_.source_addresses[address_index % cfg_.source_addresses.size()]);
    if (bind(fd, reinterpret_cast<const sockaddr*>(&src), sizeof src) != 0) {
      const int err = uv_translate_sys_error(errno);
      ::close(fd);
      return err;
    }
  }
  uv_tcp_init(&loop_, &c.tcp);
  c.handle_open = true;
  if (int e = uv_tcp_open(&c.tcp, fd)) {
    ::close(fd);  // uv_tcp_open failed, so the handle does not own fd
    return e;
  }
  uv_tcp_nodelay(&c.tcp, 1);
  sockaddr_storage dst{};
  if (cfg_.host.ipv6) {
    auto& d6 = reinterpret_cast<sockaddr_in6&>(dst);
    d6.sin6_family = AF_INET6;
    d6.sin6_port = htons(cfg_.port);
    std::memcpy(&d6.sin6_addr, cfg_.host.v6.data(), 16);
  } else {
    auto& d4 = reinterpret_cast<sockaddr_in&>(dst);
    d4.sin_family = AF_INET;
    d4.sin_port = htons(cfg_.port);
    d4.sin_addr.s_addr = htonl(cfg_.host.v4);
  }
  // Taken before connect(): on loopback the server may accept inside the call, and this
  // process may be preempted for a long time on a loaded machine before it reads the clock
  // again. The server cannot have accepted earlier than this, whatever the scheduler does.
  c.connect_ms = now_ms();
  const int e = uv_tcp_connect(&c.connect_req, &c.tcp, reinterpret_cast<const sockaddr*>(&dst),
                               &RunnerCore::on_connect);
  if (e == 0) ++connecting_;
  return e;
}

void RunnerCore::connect_failed(Connection& c, int err) {
  count_connect_error(c, uv_err_name(err));
}

void RunnerCore::count_connect_error(Connection& c, const char* kind) {
  ++result_.connect_errors;
  if (result_.connect_errors_by_kind[kind]++ == 0) {
    wheel::logger()->warn(
        "wheel-load: connect failed: {} (further {} errors are counted, not logged)", kind, kind);
  }
  c.state = ConnState::kClosed;
  close_handle(c);
  maybe_give_up();
}

// A load test against a server that cannot be reached measures nothing: once every connect
// has failed and none is under way, it gives up, when every connection was tried or after
// kGiveUpAfterMs of failures (a server still starting gets that long), instead of waiting for
// --duration.
void RunnerCore::maybe_give_up() {
  if (first_failure_ms_ < 0) first_failure_ms_ = now_ms();
  if (ending_ || connecting_ > 0 ||
      result_.connections_established + result_.churn_established > 0) {
    return;
  }
  const double failing_for_ms = now_ms() - first_failure_ms_;
  if (next_to_open_ < cfg_.share && failing_for_ms < kGiveUpAfterMs) return;
  std::string kinds;
  for (const auto& [kind, n] : result_.connect_errors_by_kind) {
    kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", kind, n);
  }
  result_.gave_up =
      fmt::format("no connection could be made to {}:{}: all {} attempts in {:.1f} s failed ({})",
                  cfg_.host.to_string(), cfg_.port, result_.connect_errors + result_.churn_failed,
                  now_ms() / 1000.0, kinds.empty() ? "churn only" : kinds);
  wheel::logger()->error("wheel-load: giving up: {}", result_.gave_up);
  end();
}

void RunnerCore::on_connect(uv_connect_t* req, int status) {
  Connection& c = conn_of(req);
  RunnerCore& self = *c.runner;
  --self.connecting_;
  if (c.state != ConnState::kConnecting) return;  // closed meanwhile (end of run), counted
  if (c.churn) return self.churn_connected(c, status);
  if (status < 0) return self.connect_failed(c, status);
  c.state = ConnState::kOpen;
  ++self.result_.connections_established;
  self.result_.connect_ms.push_back(self.now_ms() - c.connect_ms);
  if (c.active) {
    ++self.result_.active_count;
    ++self.active_open_;
    self.pings_.add(c.local_index, self.rng_());
    if (c.role == Role::kSlowReader) self.slow_ids_.push_back(c.local_index);
  } else {
    ++self.result_.idle_count;
    ++self.idle_open_;
  }
  self.result_.peak_open = std::max(self.result_.peak_open, self.active_open_ + self.idle_open_);
  self.start_reading(c);
}

void RunnerCore::start_reading(Connection& c) {
  uv_read_start(reinterpret_cast<uv_stream_t*>(&c.tcp), &RunnerCore::on_alloc,
                &RunnerCore::on_read);
}

}  // namespace wheel::load
