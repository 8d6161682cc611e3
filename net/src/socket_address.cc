// SPDX-License-Identifier: Apache-2.0
#include "wheel/net/socket_address.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/un.h>

#include <cstddef>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace wheel::net {

bool is_unix_host(std::string_view host) {
  return host.starts_with(kUnixPrefix);
}

sockaddr_storage resolve_address(const std::string& host, std::uint16_t port) {
  if (is_unix_host(host)) {
    const std::string_view path = std::string_view(host).substr(kUnixPrefix.size());
    if (path.empty() || path.size() > kMaxUnixPath) {
      throw std::invalid_argument("unix socket path '" + std::string(path) + "' must be 1 to " +
                                  std::to_string(kMaxUnixPath) + " bytes");
    }
    sockaddr_storage addr{};
    auto* un = reinterpret_cast<sockaddr_un*>(&addr);
    un->sun_family = AF_UNIX;
    std::memcpy(un->sun_path, path.data(), path.size());
    return addr;
  }
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
  if (addr.ss_family == AF_UNIX) {
    const auto* un = reinterpret_cast<const sockaddr_un*>(&addr);
    return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) +
                                  ::strnlen(un->sun_path, sizeof(un->sun_path)) + 1);
  }
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
  if (addr->sa_family == AF_UNIX) {
    const auto* un = reinterpret_cast<const sockaddr_un*>(addr);
    const std::size_t n = ::strnlen(un->sun_path, sizeof(un->sun_path));
    return n == 0 ? std::string("unix") : std::string(kUnixPrefix).append(un->sun_path, n);
  }
  return "?";
}

std::string format_host_port(std::string_view host, std::uint16_t port) {
  if (is_unix_host(host)) return std::string(host);
  std::string out;
  if (host.find(':') != std::string_view::npos) {
    out.append("[").append(host).append("]");
  } else {
    out.append(host);
  }
  return out.append(":").append(std::to_string(port));
}

}  // namespace wheel::net
