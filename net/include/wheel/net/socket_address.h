// SPDX-License-Identifier: Apache-2.0
// Socket addresses: resolving a host (IPv4, IPv6 or a name) and formatting one for humans.
// The one place net/ turns a host string into a sockaddr (the server and the SO_REUSEPORT
// socket both use it).
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace wheel::net {

// Resolves `host` and `port` to one address: a numeric IPv4 or IPv6 address as written, or the
// first address getaddrinfo() gives for a name (which may block on DNS). Throws
// std::invalid_argument naming the host when it does not resolve. Safe from any thread.
sockaddr_storage resolve_address(const std::string& host, std::uint16_t port);

// The byte length of `addr` for bind()/connect(). Safe from any thread.
socklen_t address_length(const sockaddr_storage& addr);

// "127.0.0.1:7000" or "[::1]:7000"; "?" for an address family other than IPv4 or IPv6.
// Safe from any thread.
std::string format_address(const sockaddr* addr);

// `host`:`port` with an IPv6 literal in brackets: "[::1]:7000", "localhost:7000".
// Safe from any thread.
std::string format_host_port(std::string_view host, std::uint16_t port);

}  // namespace wheel::net
