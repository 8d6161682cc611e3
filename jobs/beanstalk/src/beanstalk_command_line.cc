// SPDX-License-Identifier: Apache-2.0
// One command line of beanstalkd's protocol -> a Request. The grammar and limits are listed in
// wheel/jobs/beanstalk_protocol.h.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

#include "wheel/jobs/beanstalk/beanstalk_protocol.h"

namespace wheel::jobs::beanstalk {
namespace {

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

// Converts to anything: T{AnyField{}, ...} compiles when aggregate T has at least that many
// fields, which is how parse<T> tells a command of one argument from one of more.
struct AnyField {
  template <class U>
  operator U() const;  // never called (only named in unevaluated requires-expressions)
};

// A command's parser, from its request's one field: none, an id (delete, touch, peek, kick-job,
// stats-job, reserve-job) or a tube (use, watch, ignore, stats-tube). A command of any other
// shape has its own specialization below; one without fails to compile here.
template <class T>
Request parse(Args& args, std::uint32_t*) {
  static_assert(
      !requires {
        T{AnyField{}, AnyField{}};
      },
      "more than one argument: specialize");
  T request;
  if constexpr (requires { request.id; }) {
    if (!args.integer(request.id, kU64) || !args.at_end()) return ProtocolError::kBadFormat;
  } else if constexpr (requires { request.tube; }) {
    if (!args.tube_rest(request.tube)) return ProtocolError::kBadFormat;
  } else {
    static_assert(
        !requires { T{AnyField{}}; }, "an argument neither id nor tube: specialize");
    if (!args.at_end()) return ProtocolError::kBadFormat;
  }
  return request;
}

template <>
Request parse<Put>(Args& args, std::uint32_t* announced_bytes) {
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

// "<id> <pri>", how release and bury begin, into `request`'s id and priority.
template <class T>
bool id_and_priority(Args& args, T& request) {
  std::uint64_t priority = 0;
  if (!args.integer(request.id, kU64) || !args.integer(priority, kU32)) return false;
  request.priority = static_cast<std::uint32_t>(priority);
  return true;
}

template <>
Request parse<Release>(Args& args, std::uint32_t*) {
  Release release;
  if (!id_and_priority(args, release) || !args.duration(release.delay, kMaxDurationSeconds) ||
      !args.at_end()) {
    return ProtocolError::kBadFormat;
  }
  return release;
}

template <>
Request parse<Bury>(Args& args, std::uint32_t*) {
  Bury bury;
  if (!id_and_priority(args, bury) || !args.at_end()) return ProtocolError::kBadFormat;
  return bury;
}

template <>
Request parse<ReserveWithTimeout>(Args& args, std::uint32_t*) {
  ReserveWithTimeout request;
  if (!args.duration(request.timeout, kMaxReserveTimeoutSeconds) || !args.at_end()) {
    return ProtocolError::kBadFormat;
  }
  return request;
}

template <>
Request parse<Kick>(Args& args, std::uint32_t*) {
  Kick kick;
  if (!args.integer(kick.bound, kU64) || !args.at_end()) return ProtocolError::kBadFormat;
  return kick;
}

template <>
Request parse<PauseTube>(Args& args, std::uint32_t*) {
  PauseTube pause;
  if (!args.tube_token(pause.tube) || !args.duration(pause.delay, kMaxDurationSeconds) ||
      !args.at_end()) {
    return ProtocolError::kBadFormat;
  }
  return pause;
}

struct Command {
  std::string_view name;
  Parser parse;
};

// The commands beanstalkd's protocol.txt lists: every alternative of Request but the last
// (ProtocolError), each under its name (kCommandNames) with its parser.
template <std::size_t... I>
constexpr std::array<Command, sizeof...(I)> commands(std::index_sequence<I...>) {
  return {Command{kCommandNames[I], parse<std::variant_alternative_t<I, Request>>}...};
}
constexpr auto kCommands = commands(std::make_index_sequence<std::size(kCommandNames)>());

// The commands whose bare name (no space, no argument) beanstalkd 1.12 answers UNKNOWN_COMMAND:
// it finds a command by the prefix "put " (with its space), so "put" alone matches none. The
// other commands that take arguments answer BAD_FORMAT bare, there as here: beanstalkd matches
// "stats-job", "stats-tube", "reserve-with-timeout" and "reserve-job" as the prefix commands
// "stats" and "reserve" (which then refuse the line), and its "pause-tube" has no space.
constexpr std::string_view kUnknownWhenBare[] = {"put",  "peek",  "delete",   "release",
                                                 "bury", "kick",  "kick-job", "touch",
                                                 "use",  "watch", "ignore"};

}  // namespace

Request parse_command_line(std::string_view line, std::uint32_t* announced_bytes) {
  // beanstalkd refuses a NUL anywhere in the line ("possible maliciousness").
  if (line.find('\0') != std::string_view::npos) return ProtocolError::kBadFormat;
  const std::size_t space = line.find(' ');
  const std::string_view name = line.substr(0, space);
  Args args(space == std::string_view::npos ? std::string_view{} : line.substr(space));
  if (space == std::string_view::npos) {
    for (const std::string_view bare : kUnknownWhenBare) {
      if (bare == name) return ProtocolError::kUnknownCommand;
    }
  }
  for (const Command& command : kCommands) {
    if (command.name == name) return command.parse(args, announced_bytes);
  }
  return ProtocolError::kUnknownCommand;
}

}  // namespace wheel::jobs::beanstalk
