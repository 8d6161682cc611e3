#include "wheel/net/duration.h"

#include <cstdint>
#include <limits>

namespace wheel::net {

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) {
  if (text == "0") return std::chrono::milliseconds(0);
  std::size_t digits = 0;
  std::int64_t value = 0;
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') {
    const int d = text[digits] - '0';
    if (value > (kMax - d) / 10) return std::nullopt;
    value = value * 10 + d;
    ++digits;
  }
  if (digits == 0) return std::nullopt;
  const std::string_view unit = text.substr(digits);
  std::int64_t scale = 0;
  if (unit == "ms") {
    scale = 1;
  } else if (unit == "s") {
    scale = 1000;
  } else if (unit == "m") {
    scale = 60'000;
  } else if (unit == "h") {
    scale = 3'600'000;
  } else {
    return std::nullopt;
  }
  if (value > kMax / scale) return std::nullopt;
  return std::chrono::milliseconds(value * scale);
}

std::string format_duration(std::chrono::milliseconds d) {
  const std::int64_t ms = d.count();
  if (ms == 0) return "0";
  if (ms % 3'600'000 == 0) return std::to_string(ms / 3'600'000) + "h";
  if (ms % 60'000 == 0) return std::to_string(ms / 60'000) + "m";
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

}  // namespace wheel::net
