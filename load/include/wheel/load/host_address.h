// SPDX-License-Identifier: Apache-2.0
// The server wheel-load connects to: --host as a host name or a numeric IPv4 or IPv6 address,
// resolved once before the run.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "wheel/load/address_range.h"

namespace wheel::load {

struct HostAddress {
  bool ipv6 = false;
  Ipv4 v4 = 0x7f000001;               // when !ipv6: host byte order
  std::array<std::uint8_t, 16> v6{};  // when ipv6: network byte order

  // 127.0.0.0/8 or ::1.
  bool is_loopback() const;
  // "127.0.0.1", or "[::1]" (bracketed, so that ":port" can follow).
  std::string to_string() const;
};

// Resolves `text`: a numeric IPv4 address, a numeric IPv6 address with or without brackets
// ("::1", "[::1]"), or a host name looked up with getaddrinfo ("localhost"). A name with
// addresses of both families gives its first IPv4 address (source-address ranges are IPv4),
// else its first IPv6 address.
// Throws std::invalid_argument saying why ("cannot resolve 'nosuch.invalid': Name or service
// not known") when the text is empty, malformed, or the name does not resolve.
HostAddress resolve_host(std::string_view text);

}  // namespace wheel::load
