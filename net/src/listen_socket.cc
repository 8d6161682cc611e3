// SPDX-License-Identifier: Apache-2.0
#include "wheel/net/listen_socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
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

namespace {

[[noreturn]] void throw_path(int error, const std::string& what, const std::string& path) {
  throw std::system_error(error, std::generic_category(),
                          what + " " + path + " (" + uv_err_name(-error) + ")");
}

// Whether a server accepts connections at `path` (a connect to it succeeds).
bool someone_listens(const sockaddr_storage& addr) {
  const int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (probe < 0) throw_errno("socket");
  const bool answered =
      ::connect(probe, reinterpret_cast<const sockaddr*>(&addr), address_length(addr)) == 0;
  ::close(probe);
  return answered;
}

}  // namespace

BoundUnixSocket bind_unix_socket(const std::string& path, std::uint32_t mode) {
  if (mode > kMaxUnixMode) {
    throw std::invalid_argument("unix socket mode must be 0 to 0777 (octal)");
  }
  const sockaddr_storage addr = resolve_address(std::string(kUnixPrefix) + path, 0);
  struct stat existing {};
  if (::lstat(path.c_str(), &existing) == 0) {
    if (!S_ISSOCK(existing.st_mode)) throw_path(EEXIST, "not a socket, left alone:", path);
    if (someone_listens(addr)) throw_path(EADDRINUSE, "a server is listening on", path);
    // Stale: its server is gone (ECONNREFUSED). Replaced, as nothing can use it.
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) throw_path(errno, "unlink", path);
  }
  BoundUnixSocket bound;
  bound.fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (bound.fd < 0) throw_errno("socket");
  auto fail = [&](const char* what) {
    const int saved = errno;
    ::close(bound.fd);
    throw_path(saved, what, path);
  };
  if (::bind(bound.fd, reinterpret_cast<const sockaddr*>(&addr), address_length(addr)) != 0) {
    fail("bind");
  }
  struct stat made {};
  if (::chmod(path.c_str(), static_cast<mode_t>(mode)) != 0 || ::lstat(path.c_str(), &made) != 0) {
    const int saved = errno;
    ::unlink(path.c_str());
    errno = saved;
    fail("chmod");
  }
  bound.device = static_cast<std::uint64_t>(made.st_dev);
  bound.inode = static_cast<std::uint64_t>(made.st_ino);
  return bound;
}

bool remove_unix_socket(const std::string& path, const BoundUnixSocket& bound) {
  struct stat now {};
  if (::lstat(path.c_str(), &now) != 0) return false;
  if (static_cast<std::uint64_t>(now.st_dev) != bound.device ||
      static_cast<std::uint64_t>(now.st_ino) != bound.inode) {
    return false;
  }
  return ::unlink(path.c_str()) == 0;
}

std::uint16_t bound_port(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) throw_errno("getsockname");
  if (addr.ss_family == AF_UNIX) return 0;
  if (addr.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
  return ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
}

}  // namespace wheel::net
