// A command-line duration: an integer with a unit, as wheel-load's options take them.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace wheel::load {

// Parses "<integer><unit>" with unit ms, s, m or h ("250ms", "5s", "2m"); a bare "0" is zero.
// Returns the duration in milliseconds.
// Throws std::invalid_argument naming the expected form when `text` is anything else
// (no unit, negative, fractional, overflowing).
std::chrono::milliseconds parse_duration(std::string_view text);

// Formats a duration the way parse_duration reads it, with the largest exact unit ("1500ms", "5s").
std::string format_duration(std::chrono::milliseconds d);

}  // namespace wheel::load
