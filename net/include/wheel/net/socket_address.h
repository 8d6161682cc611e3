// SPDX-License-Identifier: Apache-2.0
// Socket addresses: resolving a host (IPv4, IPv6, a name, or "unix:PATH" for a unix-domain
// socket, as beanstalkd's -l unix:PATH) and formatting one for humans.
// The one place net/ turns a host string into a sockaddr (the server and the SO_REUSEPORT
// socket both use it).
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace wheel::net {

// The prefix of a unix-domain socket's host: "unix:/run/wheel.sock".
inline constexpr std::string_view kUnixPrefix = "unix:";
// Longest path of a unix-domain socket (sockaddr_un's sun_path, its NUL excluded).
inline constexpr std::size_t kMaxUnixPath = 107;
// True for "unix:PATH". Safe from any thread.
bool is_unix_host(std::string_view host);

// Resolves `host` and `port` to one address: a numeric IPv4 or IPv6 address as written, the
// first address getaddrinfo() gives for a name (which may block on DNS), or for "unix:PATH" the
// unix-domain address of PATH (`port` unused). Throws std::invalid_argument naming the host
// when it does not resolve, or the path when it is empty or longer than kMaxUnixPath bytes.
// Safe from any thread.
sockaddr_storage resolve_address(const std::string& host, std::uint16_t port);

// The byte length of `addr` for bind()/connect(). Safe from any thread.
socklen_t address_length(const sockaddr_storage& addr);

// "127.0.0.1:7000" or "[::1]:7000"; "unix:PATH" for a unix-domain address ("unix" for a
// client's, which has no path); "?" for another family. Safe from any thread.
std::string format_address(const sockaddr* addr);

// `host`:`port` with an IPv6 literal in brackets: "[::1]:7000", "localhost:7000"; a
// "unix:PATH" host as it is. Safe from any thread.
std::string format_host_port(std::string_view host, std::uint16_t port);

}  // namespace wheel::net
