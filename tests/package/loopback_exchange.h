// SPDX-License-Identifier: Apache-2.0
// Shared by the consumers that embed a wheel::net::TcpServer (net_consumer.cc,
// pkgconfig_jobs_consumer.cc): one request from a client thread over loopback, then shutdown.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <thread>

#include <wheel/net/tcp_server.h>

// Runs `server` (listening on 127.0.0.1:`port`) while a client thread sends `request` and reads
// one reply (at most 63 bytes), then shuts it down. Returns the reply ("" when none came).
inline std::string exchange_once(wheel::net::TcpServer& server, std::uint16_t port,
                                 std::string_view request) {
  std::string reply;
  std::thread client([&] {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
        ::send(fd, request.data(), request.size(), 0) == static_cast<ssize_t>(request.size())) {
      char buf[64] = {};
      const ssize_t n = ::recv(fd, buf, sizeof(buf) - 1, 0);
      if (n > 0) reply.assign(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    server.shutdown();  // safe from any thread
  });
  server.run();
  client.join();
  return reply;
}
