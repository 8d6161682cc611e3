// SPDX-License-Identifier: Apache-2.0
// Internal to the apps: range checks of command-line values, done on the text before any
// conversion, so that a value that does not fit (99999999999999999999) is refused instead of
// saturated, and every message says the accepted range in plain numbers ("from 1 to 1048576",
// never CLI11's "0.000000 to 1.79769e+308"). The callers wrap them in a CLI::Validator, whose
// errors CLI11 prefixes with the option's name ("--max-line: must be ...").
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace wheel::apps {

// Empty when `text` is a whole decimal number (digits only, no sign, no spaces) within
// lo ..= hi; otherwise "must be a whole number from LO to HI, got 'TEXT'". Safe from any thread.
std::string check_whole_number(std::string_view text, std::uint64_t lo, std::uint64_t hi);

// Empty when `text` is a duration (parse_duration()) within lo ..= hi; otherwise a message that
// names the expected form, or the range in the shortest duration spelling ("from 1ms to 1h").
// Safe from any thread.
std::string check_duration(std::string_view text, std::chrono::milliseconds lo,
                           std::chrono::milliseconds hi);

// A unix socket file's mode written in octal ("660", "0600"): 1 to 4 octal digits, at most
// 0777. nullopt for anything else. Safe from any thread.
std::optional<std::uint32_t> parse_unix_mode(std::string_view text);

}  // namespace wheel::apps
