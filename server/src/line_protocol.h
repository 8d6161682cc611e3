// SPDX-License-Identifier: Apache-2.0
// Internal: parsing of one protocol line into a command. Pure; no I/O.
#pragma once

#include <cstdint>
#include <string_view>

namespace wheel::server {

// Limits of DELAY, from the protocol.
inline constexpr std::uint64_t kMinDelayMs = 1;
inline constexpr std::uint64_t kMaxDelayMs = 86'400'000;
inline constexpr std::size_t kMaxDelayedPerConnection = 1000;

struct Command {
  enum Kind { kEmpty, kPing, kPong, kDelay, kBadDelay, kStats, kQuit, kUnknown };
  Kind kind = kUnknown;
  std::uint64_t delay_ms = 0;  // kDelay only
  std::string_view text;       // kDelay only; points into the parsed line
};

// Parses one line, its "\n" and one trailing "\r" already removed (as net::LineFramer hands it).
// Commands are case-sensitive. "DELAY <ms> <text>": ms is decimal within [kMinDelayMs,
// kMaxDelayMs], the text is everything after the next space (it may be empty); otherwise kBadDelay.
Command parse_stripped_command(std::string_view line);

// parse_stripped_command() of `line` without one trailing "\r" (a raw line, "\n" removed).
Command parse_command(std::string_view line);

}  // namespace wheel::server
