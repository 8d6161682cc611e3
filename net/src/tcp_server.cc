// SPDX-License-Identifier: Apache-2.0
#include "wheel/net/tcp_server.h"

#include "server_core.h"

namespace wheel::net {

TcpServer::TcpServer(TcpServerOptions options, ConnectionHandler& handler)
    : core_(std::make_unique<ServerCore>(nullptr, std::move(options), handler)) {}
TcpServer::TcpServer(uv_loop_t* loop, TcpServerOptions options, ConnectionHandler& handler)
    : core_(std::make_unique<ServerCore>(loop, std::move(options), handler)) {}
TcpServer::~TcpServer() = default;

std::uint16_t TcpServer::listen() {
  return core_->listen();
}
void TcpServer::handle_signals() {
  core_->handle_signals();
}
void TcpServer::run() {
  core_->run();
}
void TcpServer::shutdown() {
  core_->request_shutdown();
}
bool TcpServer::stopped() const {
  return core_->stopped();
}
std::uint16_t TcpServer::port() const {
  return core_->port();
}
Connection* TcpServer::find(std::uint64_t id) {
  return core_->find(id);
}
LoopTimer& TcpServer::timer() {
  return core_->timer();
}
uv_loop_t* TcpServer::loop() {
  return core_->loop();
}
const TcpServerOptions& TcpServer::options() const {
  return core_->options();
}
TcpServerCounters TcpServer::counters() const {
  return core_->counters();
}

}  // namespace wheel::net
