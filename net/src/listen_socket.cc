// SPDX-License-Identifier: Apache-2.0
#include "wheel/net/listen_socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <system_error>

#include "wheel/net/socket_address.h"

namespace wheel::net {
namespace {

[[noreturn]] void throw_errno(const char* what) {
  throw std::system_error(errno, std::generic_category(), what);
}

}  // namespace

int bind_reuseport_socket(const std::string& host, std::uint16_t port) {
  return bind_tcp_socket(host, port, true);
}

int bind_tcp_socket(const std::string& host, std::uint16_t port, bool reuse_port) {
  const sockaddr_storage addr = resolve_address(host, port);
  const int fd = ::socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) throw_errno("socket");
  const int on = 1;
  if (::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) != 0 ||
      (reuse_port && ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof(on)) != 0)) {
    const int saved = errno;
    ::close(fd);
    errno = saved;
    throw_errno("setsockopt(SO_REUSEPORT)");
  }
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), address_length(addr)) != 0) {
    const int saved = errno;
    ::close(fd);
    errno = saved;
    throw std::system_error(saved, std::generic_category(),
                            std::string("bind (") + uv_err_name(-saved) + ")");
  }
  return fd;
}

std::uint16_t bound_port(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) throw_errno("getsockname");
  if (addr.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
  return ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
}

}  // namespace wheel::net
