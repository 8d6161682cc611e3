// SPDX-License-Identifier: Apache-2.0
#include "wheel/load/address_range.h"

#include <charconv>
#include <stdexcept>

namespace wheel::load {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

}  // namespace

Ipv4 parse_ipv4(std::string_view text) {
  const auto bad = [&] {
    return std::invalid_argument("bad IPv4 address '" + std::string(text) +
                                 "': expected a dotted quad such as 127.0.0.1");
  };
  Ipv4 address = 0;
  const char* p = text.data();
  const char* end = text.data() + text.size();
  for (int part = 0; part < 4; ++part) {
    if (part > 0) {
      if (p == end || *p != '.') throw bad();
      ++p;
    }
    unsigned octet = 0;
    auto [next, ec] = std::from_chars(p, end, octet);
    // Leading '+', '-' and empty octets are rejected by from_chars; lengths > 3 or > 255 here.
    if (ec != std::errc() || next - p > 3 || octet > 255) throw bad();
    address = (address << 8) | octet;
    p = next;
  }
  if (p != end) throw bad();
  return address;
}

std::string format_ipv4(Ipv4 address) {
  return std::to_string(address >> 24) + "." + std::to_string((address >> 16) & 0xff) + "." +
         std::to_string((address >> 8) & 0xff) + "." + std::to_string(address & 0xff);
}

std::vector<Ipv4> parse_source_addresses(std::string_view text) {
  std::vector<Ipv4> addresses;
  std::string_view rest = text;
  while (true) {
    const auto comma = rest.find(',');
    const std::string_view item = trim(rest.substr(0, comma));
    if (item.empty()) {
      throw std::invalid_argument("empty item in source-address list '" + std::string(text) + "'");
    }
    const auto dash = item.find('-');
    if (dash == std::string_view::npos) {
      addresses.push_back(parse_ipv4(item));
    } else {
      const Ipv4 first = parse_ipv4(trim(item.substr(0, dash)));
      const Ipv4 last = parse_ipv4(trim(item.substr(dash + 1)));
      if (last < first) {
        throw std::invalid_argument("source-address range '" + std::string(item) +
                                    "' runs backwards: the first address must not exceed the last");
      }
      // Checked before expanding so a huge range costs nothing.
      if (std::uint64_t{last} - first + 1 + addresses.size() > kMaxSourceAddresses) {
        throw std::invalid_argument("source-address list '" + std::string(text) +
                                    "' has more than 65536 addresses");
      }
      for (std::uint64_t a = first; a <= last; ++a) addresses.push_back(static_cast<Ipv4>(a));
    }
    if (addresses.size() > kMaxSourceAddresses) {
      throw std::invalid_argument("source-address list '" + std::string(text) +
                                  "' has more than 65536 addresses");
    }
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return addresses;
}

}  // namespace wheel::load
