// SPDX-License-Identifier: Apache-2.0
#include "wheel/net/tcp_server.h"

#include "reactor.h"

namespace wheel::net {

TcpServer::TcpServer(TcpServerOptions options, ConnectionHandler& handler)
    : reactor_(std::make_unique<Reactor>(nullptr, std::move(options), handler)) {}
TcpServer::TcpServer(uv_loop_t* loop, TcpServerOptions options, ConnectionHandler& handler)
    : reactor_(std::make_unique<Reactor>(loop, std::move(options), handler)) {}
TcpServer::~TcpServer() = default;

std::uint16_t TcpServer::listen() {
  return reactor_->listen();
}
void TcpServer::handle_signals() {
  reactor_->handle_signals();
}
void TcpServer::run() {
  reactor_->run();
}
void TcpServer::shutdown() {
  reactor_->request_shutdown();
}
bool TcpServer::stopped() const {
  return reactor_->stopped();
}
std::uint16_t TcpServer::port() const {
  return reactor_->port();
}
Connection* TcpServer::find(std::uint64_t id) {
  return reactor_->find(id);
}
LoopTimer& TcpServer::timer() {
  return reactor_->timer();
}
uv_loop_t* TcpServer::loop() {
  return reactor_->loop();
}
const TcpServerOptions& TcpServer::options() const {
  return reactor_->options();
}
TcpServerCounters TcpServer::counters() const {
  return reactor_->counters();
}

}  // namespace wheel::net
