// SPDX-License-Identifier: Apache-2.0
// Test support: one scrape of a program's /metrics endpoint on loopback (GET, read to the close,
// every wait bounded), parsed with the format's rules (prometheus_parser.h).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "prometheus_parser.h"

namespace wheel_test {

struct Scrape {
  wheel::testing::Exposition e;
  std::size_t bytes = 0;  // of the body
};

// A blocking TCP connection to 127.0.0.1:port; -1 when it cannot connect.
inline int connect_loopback(std::uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return fd;
  close(fd);
  return -1;
}

// Appends what `fd` has to `buffer`, waiting up to 20 s for it; false at EOF, error or silence.
inline bool read_more(int fd, std::string& buffer) {
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, 20'000) <= 0) return false;
  char chunk[65536];
  const ssize_t n = read(fd, chunk, sizeof chunk);
  if (n <= 0) return false;
  buffer.append(chunk, static_cast<std::size_t>(n));
  return true;
}

// GET /metrics on 127.0.0.1:port; the whole reply (to the server's close).
inline std::string get_metrics(std::uint16_t port) {
  std::string reply;
  const int fd = connect_loopback(port);
  if (fd < 0) return reply;
  const std::string request = "GET /metrics HTTP/1.1\r\nHost: test\r\n\r\n";
  (void)!send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  while (read_more(fd, reply)) {
  }
  close(fd);
  return reply;
}

// A 200 reply's body, parsed; throws std::runtime_error for any other reply or a broken body.
inline Scrape scrape(std::uint16_t port) {
  const std::string reply = get_metrics(port);
  if (reply.rfind("HTTP/1.1 200 OK\r\n", 0) != 0) throw std::runtime_error("bad reply: " + reply);
  const std::string body = reply.substr(reply.find("\r\n\r\n") + 4);
  return {wheel::testing::parse_exposition(body), body.size()};
}

// The samples of `family` (0 when it is absent).
inline std::size_t series_of(const wheel::testing::Exposition& e, const std::string& family) {
  const auto it = e.families.find(family);
  return it == e.families.end() ? 0 : it->second.samples.size();
}

}  // namespace wheel_test
