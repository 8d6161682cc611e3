// SPDX-License-Identifier: Apache-2.0
// TcpServer's methods work on its Reactor's state directly (TcpServer is the reactor's friend):
// the reactor holds the server's parts and callbacks, this file what the owner may ask of them.
#include "wheel/net/tcp_server.h"

#include <signal.h>
#include <spdlog/spdlog.h>

#include <mutex>
#include <stdexcept>
#include <thread>

#include "reactor.h"
#include "wheel/logger.h"
#include "wheel/net/uv_error.h"

namespace wheel::net {

TcpServer::TcpServer(TcpServerOptions options, ConnectionHandler& handler)
    : reactor_(std::make_unique<Reactor>(nullptr, std::move(options), handler)) {}
TcpServer::TcpServer(uv_loop_t* loop, TcpServerOptions options, ConnectionHandler& handler)
    : reactor_(std::make_unique<Reactor>(loop, std::move(options), handler)) {}
TcpServer::~TcpServer() = default;

std::uint16_t TcpServer::listen() {
  Reactor& r = *reactor_;
  ::signal(SIGPIPE, SIG_IGN);  // a write to a reset socket must fail with EPIPE, not kill
  const TcpServerOptions& o = r.options_;
  const std::uint16_t port =
      r.acceptor_.listen(o.host, o.port, o.reuse_port, o.backlog, o.unix_mode);
  r.port_.store(port, std::memory_order_release);
  return port;
}

void TcpServer::handle_signals() {
  Reactor& r = *reactor_;
  const auto on_signal = [](uv_signal_t* s, int signum) {
    wheel::logger()->info("TcpServer: got signal {}, shutting down", signum);
    static_cast<Reactor*>(s->data)->begin_shutdown();
  };
  r.init_handle(uv_signal_init(r.loop_, &r.sigint_), "uv_signal_init");
  r.sigint_.data = &r;
  if (const int rc = uv_signal_init(r.loop_, &r.sigterm_); rc != 0) {
    r.close_handle(&r.sigint_);
    check_uv(rc, "uv_signal_init");
  }
  ++r.open_handles_;
  r.sigterm_.data = &r;
  r.signals_ = true;
  check_uv(uv_signal_start(&r.sigint_, on_signal, SIGINT), "uv_signal_start(SIGINT)");
  check_uv(uv_signal_start(&r.sigterm_, on_signal, SIGTERM), "uv_signal_start(SIGTERM)");
}

void TcpServer::run() {
  Reactor& r = *reactor_;
  if (r.own_loop_ == nullptr) throw std::logic_error("TcpServer::run: the loop is the owner's");
  r.loop_thread_ = std::this_thread::get_id();
  uv_run(r.loop_, UV_RUN_DEFAULT);
}

void TcpServer::shutdown() {
  Reactor& r = *reactor_;
  std::lock_guard<std::mutex> lock(r.shutdown_mutex_);
  if (r.shutdown_async_open_) uv_async_send(&r.shutdown_async_);
}

bool TcpServer::stopped() const {
  return reactor_->stopped();
}

std::uint16_t TcpServer::port() const {
  return reactor_->port_.load(std::memory_order_acquire);
}

Connection* TcpServer::find(std::uint64_t id) {
  return reactor_->find(id);
}

LoopTimer& TcpServer::timer() {
  return *reactor_->timer_;
}

uv_loop_t* TcpServer::loop() {
  return reactor_->loop_;
}

const TcpServerOptions& TcpServer::options() const {
  return reactor_->options_;
}

TcpServerCounters TcpServer::counters() const {
  TcpServerCounters c = reactor_->counts_;
  c.stale_timeouts = reactor_->detector_->stale_timeouts();
  return c;
}

}  // namespace wheel::net
