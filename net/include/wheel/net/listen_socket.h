// SPDX-License-Identifier: Apache-2.0
// A listening socket created and bound by hand, for what libuv 1.44 cannot ask for:
// SO_REUSEPORT, so that several worker processes accept on one port and the kernel spreads the
// clients, an accept path of the server's own (it tells clients refused for lack of descriptors
// why), and a unix-domain socket with a stated mode that replaces only a stale file.
#pragma once

#include <cstdint>
#include <string>

namespace wheel::net {

// Creates a non-blocking, close-on-exec TCP socket for `host` (see resolve_address()) with
// SO_REUSEADDR and SO_REUSEPORT, and binds it to `port` (0: a free port). Does not listen: a
// bound socket that is not listening receives no clients, so a supervisor can hold the port.
// Returns the descriptor, owned by the caller. Throws std::system_error naming the step that
// failed, std::invalid_argument for a host that does not resolve.
// Safe from any thread.
int bind_reuseport_socket(const std::string& host, std::uint16_t port);

// The same with SO_REUSEADDR only (`reuse_port` false): a second server on the port fails
// with EADDRINUSE. Safe from any thread.
int bind_tcp_socket(const std::string& host, std::uint16_t port, bool reuse_port);

// The port a bound socket holds (0 for a unix-domain one). Throws std::system_error. Safe from
// any thread.
std::uint16_t bound_port(int fd);

// A unix-domain socket bound at a path, and the identity of the file it made there.
struct BoundUnixSocket {
  int fd = -1;  // owned by the caller
  std::uint64_t device = 0, inode = 0;
};

// Most permissive mode of a unix-domain socket's file.
inline constexpr std::uint32_t kMaxUnixMode = 0777;

// Creates a non-blocking, close-on-exec unix-domain stream socket and binds it at `path` with
// permissions `mode` (set before anyone can connect: the socket does not listen yet). A file
// already at `path` is connected to first: if a server answers, throws std::system_error
// (EADDRINUSE, "... a server is listening on PATH"); a socket nobody listens on (left by a
// server that died) is removed and replaced; a file that is not a socket is left alone and
// refused (EEXIST). Throws std::system_error naming the step that failed,
// std::invalid_argument for a path that is empty or over kMaxUnixPath bytes or a mode over
// kMaxUnixMode. Safe from any thread.
BoundUnixSocket bind_unix_socket(const std::string& path, std::uint32_t mode);

// Removes the file at `path` if it is still the one bind_unix_socket() made (same device and
// inode): a newer server that replaced it keeps its own. Returns whether it removed it.
// Safe from any thread.
bool remove_unix_socket(const std::string& path, const BoundUnixSocket& bound);

}  // namespace wheel::net
