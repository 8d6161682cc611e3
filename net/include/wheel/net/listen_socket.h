// SPDX-License-Identifier: Apache-2.0
// A TCP socket created and bound by hand, for what libuv 1.44 cannot ask for: SO_REUSEPORT,
// so that several worker processes accept on one port and the kernel spreads the clients, and
// an accept path of the server's own (it tells clients refused for lack of descriptors why).
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

// The port a bound socket holds. Throws std::system_error. Safe from any thread.
std::uint16_t bound_port(int fd);

}  // namespace wheel::net
