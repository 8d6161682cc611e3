// SPDX-License-Identifier: Apache-2.0
// A tiny server on an installed or embedded wheel::net: answers one PING from a client thread
// over loopback, then shuts down. Exits 0 when the PONG came back.
#include <cstdio>
#include <string>

#include <wheel/net/tcp_server.h>

#include "loopback_exchange.h"

namespace {

class PongHandler : public wheel::net::ConnectionHandler {
 public:
  void on_line(wheel::net::Connection& c, std::string_view line) override {
    if (line == "PING") c.send("PONG\n");
  }
};

}  // namespace

int main() {
  PongHandler handler;
  wheel::net::TcpServerOptions options;  // 127.0.0.1, port 0
  options.idle.reader = std::chrono::seconds(30);
  wheel::net::TcpServer server(options, handler);
  const std::uint16_t port = server.listen();
  const std::string reply = exchange_once(server, port, "PING\n");
  std::printf("net consumer: got %s", reply.c_str());
  return reply == "PONG\n" ? 0 : 1;
}
