// SPDX-License-Identifier: Apache-2.0
// One command line of beanstalkd's protocol -> a Request. The grammar and limits are listed in
// wheel/jobs/beanstalk_protocol.h.
#include <cstdint>
#include <string_view>

#include "wheel/jobs/beanstalk_protocol.h"

namespace wheel::jobs::beanstalk {
namespace {

constexpr bool is_name_char(char c) noexcept {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '+' || c == '/' || c == ';' || c == '.' || c == '$' || c == '_' || c == '(' ||
         c == ')';
}

constexpr bool is_digit(char c) noexcept {
  return c >= '0' && c <= '9';
}

// The arguments after the command word, consumed left to right.
class Args {
 public:
  explicit Args(std::string_view rest) : rest_(rest) {}

  bool at_end() const noexcept { return rest_.empty(); }

  // One or more spaces, then a decimal integer <= max ending at a space or the end.
  bool integer(std::uint64_t& out, std::uint64_t max) {
    if (!skip_spaces()) return false;
    std::uint64_t value = 0;
    if (!digits(value, max)) return false;
    out = value;
    return token_ends();
  }

  // One or more spaces, then seconds with up to three decimals, at most max_seconds in all.
  bool duration(Millis& out, std::uint64_t max_seconds) {
    if (!skip_spaces()) return false;
    std::uint64_t seconds = 0;
    if (!digits(seconds, max_seconds)) return false;
    std::uint64_t millis = 0;
    if (!rest_.empty() && rest_.front() == '.') {
      rest_.remove_prefix(1);
      int decimals = 0;
      while (!rest_.empty() && is_digit(rest_.front())) {
        if (++decimals > 3) return false;  // finer than a millisecond: refused, not rounded
        millis = millis * 10 + static_cast<std::uint64_t>(rest_.front() - '0');
        rest_.remove_prefix(1);
      }
      if (decimals == 0) return false;
      for (; decimals < 3; ++decimals) millis *= 10;
      if (seconds == max_seconds && millis > 0) return false;
    }
    out = Millis(static_cast<Millis::rep>(seconds * 1000 + millis));
    return token_ends();
  }

  // One or more spaces, then a tube name ending at a space or the end.
  bool tube_token(std::string& out) {
    if (!skip_spaces()) return false;
    const std::size_t end = rest_.find(' ');
    const std::string_view name = rest_.substr(0, end);
    if (!is_valid_tube_name(name)) return false;
    out.assign(name);
    rest_.remove_prefix(name.size());
    return true;
  }

  // Exactly one space, then the rest of the line is the tube name (as beanstalkd: no spaces).
  bool tube_rest(std::string& out) {
    if (rest_.empty() || rest_.front() != ' ') return false;
    const std::string_view name = rest_.substr(1);
    if (!is_valid_tube_name(name)) return false;
    out.assign(name);
    rest_ = {};
    return true;
  }

 private:
  bool skip_spaces() {
    if (rest_.empty() || rest_.front() != ' ') return false;
    while (!rest_.empty() && rest_.front() == ' ') rest_.remove_prefix(1);
    return true;
  }

  // At least one digit; the value must not pass max (checked before each step: no overflow).
  bool digits(std::uint64_t& value, std::uint64_t max) {
    if (rest_.empty() || !is_digit(rest_.front())) return false;
    while (!rest_.empty() && is_digit(rest_.front())) {
      const auto digit = static_cast<std::uint64_t>(rest_.front() - '0');
      if (value > (max - digit) / 10) return false;
      value = value * 10 + digit;
      rest_.remove_prefix(1);
    }
    return true;
  }

  bool token_ends() const noexcept { return rest_.empty() || rest_.front() == ' '; }

  std::string_view rest_;
};

constexpr std::uint64_t kU32 = UINT32_MAX;
constexpr std::uint64_t kU64 = UINT64_MAX;

// Every command's parser takes the line's arguments and where put tells its body's size.
using Parser = Request (*)(Args& args, std::uint32_t* announced_bytes);

template <class T>
Request no_args(Args& args, std::uint32_t*) {
  if (!args.at_end()) return ProtocolError::kBadFormat;
  return T{};
}

// Commands of one id: delete, touch, peek, kick-job, stats-job, reserve-job.
template <class T>
Request one_id(Args& args, std::uint32_t*) {
  T request;
  if (!args.integer(request.id, kU64) || !args.at_end()) return ProtocolError::kBadFormat;
  return request;
}

template <class T>
Request one_tube(Args& args, std::uint32_t*) {
  T request;
  if (!args.tube_rest(request.tube)) return ProtocolError::kBadFormat;
  return request;
}

Request parse_put(Args& args, std::uint32_t* announced_bytes) {
  Put put;
  std::uint64_t priority = 0;
  std::uint64_t bytes = 0;
  if (!args.integer(priority, kU32) || !args.duration(put.delay, kMaxDurationSeconds) ||
      !args.duration(put.ttr, kMaxDurationSeconds) || !args.integer(bytes, kU32) ||
      !args.at_end()) {
    return ProtocolError::kBadFormat;
  }
  put.priority = static_cast<std::uint32_t>(priority);
  if (announced_bytes != nullptr) *announced_bytes = static_cast<std::uint32_t>(bytes);
  return put;
}

Request parse_release(Args& args, std::uint32_t*) {
  Release release;
  std::uint64_t priority = 0;
  if (!args.integer(release.id, kU64) || !args.integer(priority, kU32) ||
      !args.duration(release.delay, kMaxDurationSeconds) || !args.at_end()) {
    return ProtocolError::kBadFormat;
  }
  release.priority = static_cast<std::uint32_t>(priority);
  return release;
}

Request parse_bury(Args& args, std::uint32_t*) {
  Bury bury;
  std::uint64_t priority = 0;
  if (!args.integer(bury.id, kU64) || !args.integer(priority, kU32) || !args.at_end()) {
    return ProtocolError::kBadFormat;
  }
  bury.priority = static_cast<std::uint32_t>(priority);
  return bury;
}

Request parse_reserve_with_timeout(Args& args, std::uint32_t*) {
  ReserveWithTimeout request;
  if (!args.duration(request.timeout, kMaxReserveTimeoutSeconds) || !args.at_end()) {
    return ProtocolError::kBadFormat;
  }
  return request;
}

Request parse_kick(Args& args, std::uint32_t*) {
  Kick kick;
  if (!args.integer(kick.bound, kU64) || !args.at_end()) return ProtocolError::kBadFormat;
  return kick;
}

Request parse_pause_tube(Args& args, std::uint32_t*) {
  PauseTube pause;
  if (!args.tube_token(pause.tube) || !args.duration(pause.delay, kMaxDurationSeconds) ||
      !args.at_end()) {
    return ProtocolError::kBadFormat;
  }
  return pause;
}

// The commands beanstalkd's protocol.txt lists, each with its parser.
struct Command {
  std::string_view name;
  Parser parse;
};

constexpr Command kCommands[] = {
    {"put", parse_put},
    {"use", one_tube<Use>},
    {"reserve", no_args<Reserve>},
    {"reserve-with-timeout", parse_reserve_with_timeout},
    {"reserve-job", one_id<ReserveJob>},
    {"delete", one_id<Delete>},
    {"release", parse_release},
    {"bury", parse_bury},
    {"touch", one_id<Touch>},
    {"watch", one_tube<Watch>},
    {"ignore", one_tube<Ignore>},
    {"peek", one_id<Peek>},
    {"peek-ready", no_args<PeekReady>},
    {"peek-delayed", no_args<PeekDelayed>},
    {"peek-buried", no_args<PeekBuried>},
    {"kick", parse_kick},
    {"kick-job", one_id<KickJob>},
    {"stats-job", one_id<StatsJob>},
    {"stats-tube", one_tube<StatsTube>},
    {"stats", no_args<Stats>},
    {"list-tubes", no_args<ListTubes>},
    {"list-tube-used", no_args<ListTubeUsed>},
    {"list-tubes-watched", no_args<ListTubesWatched>},
    {"quit", no_args<Quit>},
    {"pause-tube", parse_pause_tube},
};

}  // namespace

bool is_valid_tube_name(std::string_view name) noexcept {
  if (name.empty() || name.size() > kMaxTubeNameBytes || name.front() == '-') return false;
  for (const char c : name) {
    if (!is_name_char(c)) return false;
  }
  return true;
}

Request parse_command_line(std::string_view line, std::uint32_t* announced_bytes) {
  // beanstalkd refuses a NUL anywhere in the line ("possible maliciousness").
  if (line.find('\0') != std::string_view::npos) return ProtocolError::kBadFormat;
  const std::size_t space = line.find(' ');
  const std::string_view name = line.substr(0, space);
  Args args(space == std::string_view::npos ? std::string_view{} : line.substr(space));
  for (const Command& command : kCommands) {
    if (command.name == name) return command.parse(args, announced_bytes);
  }
  return ProtocolError::kUnknownCommand;
}

}  // namespace wheel::jobs::beanstalk
