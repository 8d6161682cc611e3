// SPDX-License-Identifier: Apache-2.0
// A tiny server on an installed or embedded wheel::net: answers one PING from a client thread
// over loopback, then shuts down. Exits 0 when the PONG came back.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include <wheel/net/tcp_server.h>

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
  std::string reply;
  std::thread client([&] {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
        ::send(fd, "PING\n", 5, 0) == 5) {
      char buf[16] = {};
      const ssize_t n = ::recv(fd, buf, sizeof(buf) - 1, 0);
      if (n > 0) reply.assign(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    server.shutdown();  // safe from any thread
  });
  server.run();
  client.join();
  std::printf("net consumer: got %s", reply.c_str());
  return reply == "PONG\n" ? 0 : 1;
}
