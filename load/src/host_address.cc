// SPDX-License-Identifier: Apache-2.0
#include "wheel/load/host_address.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>
#include <memory>
#include <stdexcept>

namespace wheel::load {

bool HostAddress::is_loopback() const {
  if (!ipv6) return (v4 >> 24) == 127;
  static constexpr std::array<std::uint8_t, 16> kLoopback{0, 0, 0, 0, 0, 0, 0, 0,
                                                          0, 0, 0, 0, 0, 0, 0, 1};
  return v6 == kLoopback;
}

std::string HostAddress::to_string() const {
  if (!ipv6) return format_ipv4(v4);
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(AF_INET6, v6.data(), text, sizeof text);
  return "[" + std::string(text) + "]";
}

HostAddress resolve_host(std::string_view text) {
  std::string name(text);
  if (name.size() >= 2 && name.front() == '[' && name.back() == ']') {
    name = name.substr(1, name.size() - 2);  // "[::1]", as URLs and our listening line write it
  }
  if (name.empty()) throw std::invalid_argument("empty host");
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int e = getaddrinfo(name.c_str(), nullptr, &hints, &found); e != 0) {
    throw std::invalid_argument("cannot resolve '" + std::string(text) + "': " + gai_strerror(e));
  }
  const std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> owner(found, &freeaddrinfo);
  const addrinfo* v6 = nullptr;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    if (a->ai_family == AF_INET) {
      HostAddress h;
      h.v4 = ntohl(reinterpret_cast<const sockaddr_in*>(a->ai_addr)->sin_addr.s_addr);
      return h;
    }
    if (a->ai_family == AF_INET6 && v6 == nullptr) v6 = a;
  }
  if (v6 == nullptr) {
    throw std::invalid_argument("'" + std::string(text) + "' has no IPv4 or IPv6 address");
  }
  HostAddress h;
  h.ipv6 = true;
  std::memcpy(h.v6.data(), &reinterpret_cast<const sockaddr_in6*>(v6->ai_addr)->sin6_addr, 16);
  return h;
}

}  // namespace wheel::load
