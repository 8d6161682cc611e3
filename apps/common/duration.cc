// SPDX-License-Identifier: Apache-2.0
#include "duration.h"

#include <cstdint>
#include <limits>

namespace wheel::apps {

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) {
  if (text == "0") return std::chrono::milliseconds(0);
  // The largest count of milliseconds that still fits in nanoseconds.
  constexpr std::int64_t kMaxMs = std::chrono::nanoseconds::max().count() / 1'000'000;
  std::size_t digits = 0;
  std::int64_t value = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') {
    const int d = text[digits] - '0';
    if (value > (kMaxMs - d) / 10) return std::nullopt;
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
  if (value > kMaxMs / scale) return std::nullopt;
  return std::chrono::milliseconds(value * scale);
}

std::string duration_error(std::string_view text) {
  return "expected a duration such as 500ms, 30s, 5m, 1h, or 0, got '" + std::string(text) + "'";
}

std::string format_duration(std::chrono::milliseconds d) {
  const std::int64_t ms = d.count();
  if (ms == 0) return "0";
  if (ms % 3'600'000 == 0) return std::to_string(ms / 3'600'000) + "h";
  if (ms % 60'000 == 0) return std::to_string(ms / 60'000) + "m";
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

}  // namespace wheel::apps
