// SPDX-License-Identifier: Apache-2.0
#include "wheel/net/socket_address.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

#include <cstring>
#include <memory>
#include <stdexcept>

namespace wheel::net {

sockaddr_storage resolve_address(const std::string& host, std::uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | AI_ADDRCONFIG;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found);
  if (rc == EAI_NONAME || rc == EAI_ADDRFAMILY) {
    // AI_ADDRCONFIG hides ::1 on a host whose only IPv6 address is loopback: try without it.
    hints.ai_flags = AI_NUMERICSERV;
    rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found);
  }
  if (rc != 0 || found == nullptr) {
    throw std::invalid_argument("cannot resolve host '" + host + "': " + ::gai_strerror(rc));
  }
  const std::unique_ptr<addrinfo, void (*)(addrinfo*)> owner(found, ::freeaddrinfo);
  sockaddr_storage addr{};
  std::memcpy(&addr, found->ai_addr, std::min<std::size_t>(found->ai_addrlen, sizeof(addr)));
  return addr;
}

socklen_t address_length(const sockaddr_storage& addr) {
  return addr.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
}

std::string format_address(const sockaddr* addr) {
  char text[INET6_ADDRSTRLEN] = {};
  if (addr->sa_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(addr);
    ::inet_ntop(AF_INET, &v4->sin_addr, text, sizeof(text));
    return format_host_port(text, ntohs(v4->sin_port));
  }
  if (addr->sa_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(addr);
    ::inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof(text));
    return format_host_port(text, ntohs(v6->sin6_port));
  }
  return "?";
}

std::string format_host_port(std::string_view host, std::uint16_t port) {
  std::string out;
  if (host.find(':') != std::string_view::npos) {
    out.append("[").append(host).append("]");
  } else {
    out.append(host);
  }
  return out.append(":").append(std::to_string(port));
}

}  // namespace wheel::net
