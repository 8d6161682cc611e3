#include "wheel/load/duration.h"

#include <charconv>
#include <cstdint>
#include <limits>
#include <stdexcept>

namespace wheel::load {

std::chrono::milliseconds parse_duration(std::string_view text) {
  const auto bad = [&] {
    return std::invalid_argument("bad duration '" + std::string(text) +
                                 "': expected an integer with a unit (ms, s, m, h), e.g. 500ms "
                                 "or 5s, or 0");
  };
  if (text == "0") return std::chrono::milliseconds(0);
  std::uint64_t value = 0;
  const char* end = text.data() + text.size();
  auto [rest, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || rest == text.data()) throw bad();
  const std::string_view unit(rest, static_cast<std::size_t>(end - rest));
  std::uint64_t scale = 0;
  if (unit == "ms") {
    scale = 1;
  } else if (unit == "s") {
    scale = 1000;
  } else if (unit == "m") {
    scale = 60'000;
  } else if (unit == "h") {
    scale = 3'600'000;
  } else {
    throw bad();
  }
  if (value > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) / scale) {
    throw bad();
  }
  return std::chrono::milliseconds(static_cast<std::int64_t>(value * scale));
}

std::string format_duration(std::chrono::milliseconds d) {
  const auto ms = d.count();
  if (ms == 0) return "0";
  if (ms % 3'600'000 == 0) return std::to_string(ms / 3'600'000) + "h";
  if (ms % 60'000 == 0) return std::to_string(ms / 60'000) + "m";
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

}  // namespace wheel::load
