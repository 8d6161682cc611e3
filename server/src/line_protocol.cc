// SPDX-License-Identifier: Apache-2.0
#include "line_protocol.h"

#include "wheel/net/line_framer.h"

namespace wheel::server {

namespace {

Command parse_delay(std::string_view args) {
  Command bad{Command::kBadDelay, 0, {}};
  std::size_t i = 0;
  std::uint64_t ms = 0;
  while (i < args.size() && args[i] >= '0' && args[i] <= '9') {
    ms = ms * 10 + static_cast<std::uint64_t>(args[i] - '0');
    if (ms > kMaxDelayMs) return bad;  // also stops any overflow
    ++i;
  }
  if (i == 0 || ms < kMinDelayMs) return bad;
  if (i == args.size()) return {Command::kDelay, ms, {}};
  if (args[i] != ' ') return bad;
  return {Command::kDelay, ms, args.substr(i + 1)};
}

}  // namespace

Command parse_command(std::string_view line) {
  return parse_stripped_command(net::LineFramer::strip_cr(line));
}

Command parse_stripped_command(std::string_view line) {
  if (line.empty()) return {Command::kEmpty, 0, {}};
  if (line == "PING") return {Command::kPing, 0, {}};
  if (line == "PONG") return {Command::kPong, 0, {}};
  if (line == "STATS") return {Command::kStats, 0, {}};
  if (line == "QUIT") return {Command::kQuit, 0, {}};
  constexpr std::string_view kDelay = "DELAY";
  if (line.starts_with(kDelay)) {
    if (line.size() == kDelay.size()) return {Command::kBadDelay, 0, {}};
    if (line[kDelay.size()] == ' ') return parse_delay(line.substr(kDelay.size() + 1));
  }
  return {Command::kUnknown, 0, {}};
}

}  // namespace wheel::server
