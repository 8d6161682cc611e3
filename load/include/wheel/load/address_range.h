// SPDX-License-Identifier: Apache-2.0
// The source addresses wheel-load binds its connections to, so that one run is not limited by
// the ~28,000 ephemeral ports of a single address (net.ipv4.ip_local_port_range).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace wheel::load {

// An IPv4 address in host byte order (127.0.0.1 is 0x7f000001).
using Ipv4 = std::uint32_t;

// Parses a source-address list: comma-separated items, each an IPv4 address ("127.0.0.1") or
// an inclusive range "FIRST-LAST" ("127.0.0.1-127.0.0.8"). Spaces around items are ignored.
// Returns the addresses in the order given, ranges expanded in ascending order; duplicates are
// kept (binding twice to one address is legal, it only halves that address's share of ports).
// Throws std::invalid_argument with the offending item when an item is malformed, a range runs
// backwards, the list is empty, or it expands to more than kMaxSourceAddresses addresses.
std::vector<Ipv4> parse_source_addresses(std::string_view text);

// The largest list parse_source_addresses accepts (a /16): more can never be useful here.
inline constexpr std::size_t kMaxSourceAddresses = 65536;

// Parses one dotted-quad IPv4 address. Throws std::invalid_argument when malformed.
Ipv4 parse_ipv4(std::string_view text);

// Formats an address as a dotted quad.
std::string format_ipv4(Ipv4 address);

}  // namespace wheel::load
