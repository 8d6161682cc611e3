#include "wheel/net/server.h"

#include "server_core.h"

namespace wheel::net {

Server::Server(ServerOptions options) : core_(std::make_unique<ServerCore>(std::move(options))) {}
Server::~Server() = default;
std::uint16_t Server::listen() {
  return core_->listen();
}
void Server::handle_signals() {
  core_->handle_signals();
}
ServerStats Server::run() {
  return core_->run();
}
void Server::shutdown() {
  core_->request_shutdown();
}
std::uint16_t Server::port() const {
  return core_->port();
}

}  // namespace wheel::net
