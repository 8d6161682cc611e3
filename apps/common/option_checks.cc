// SPDX-License-Identifier: Apache-2.0
#include "option_checks.h"

#include <algorithm>

#include "duration.h"

namespace wheel::apps {

std::string check_whole_number(std::string_view text, std::uint64_t lo, std::uint64_t hi) {
  std::uint64_t value = 0;
  bool fits = !text.empty();
  for (const char ch : text) {
    if (ch < '0' || ch > '9') {
      fits = false;
      break;
    }
    const auto digit = static_cast<std::uint64_t>(ch - '0');
    if (value > (hi - digit) / 10 || value * 10 + digit > hi) {  // past hi: stop before overflow
      fits = false;
      break;
    }
    value = value * 10 + digit;
  }
  if (fits && value >= lo) return {};
  return "must be a whole number from " + std::to_string(lo) + " to " + std::to_string(hi) +
         ", got '" + std::string(text) + "'";
}

std::string check_duration(std::string_view text, std::chrono::milliseconds lo,
                           std::chrono::milliseconds hi) {
  const auto d = parse_duration(text);
  // Digits and a known unit but too large for nanoseconds: out of range, not malformed.
  const std::size_t digits = std::min(text.find_first_not_of("0123456789"), text.size());
  const std::string_view unit = text.substr(digits);
  const bool well_formed =
      d.has_value() || (digits > 0 && (unit == "ms" || unit == "s" || unit == "m" || unit == "h"));
  if (d && *d >= lo && *d <= hi) return {};
  if (!well_formed) return duration_error(text);
  return "must be a duration from " + format_duration(lo) + " to " + format_duration(hi) +
         ", got '" + std::string(text) + "'";
}

std::optional<std::uint32_t> parse_unix_mode(std::string_view text) {
  if (text.empty() || text.size() > 4) return std::nullopt;
  std::uint32_t mode = 0;
  for (const char c : text) {
    if (c < '0' || c > '7') return std::nullopt;
    mode = mode * 8 + static_cast<std::uint32_t>(c - '0');
  }
  if (mode > 0777) return std::nullopt;
  return mode;
}

}  // namespace wheel::apps
