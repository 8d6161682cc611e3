// SPDX-License-Identifier: Apache-2.0
// The requests of beanstalkd's protocol (1.12), one struct per command, as RequestParser
// (beanstalk_protocol.h) hands them out. Plain values: they own their strings and bodies and may
// be moved to any thread.
//
// Durations are milliseconds. beanstalkd takes whole seconds; wheel-jobs also takes up to three
// decimals ("0.250" = 250 ms) wherever a duration appears: put's delay and TTR, release's delay,
// pause-tube's delay, reserve-with-timeout's timeout. Values are as sent: a TTR of 0 is raised to
// one second by the job model, as beanstalkd does, not here.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

#include "wheel/jobs/model/millis.h"

namespace wheel::jobs::beanstalk {

// put <pri> <delay> <ttr> <bytes>\r\n<body>\r\n
struct Put {
  std::uint32_t priority = 0;
  Millis delay{0};
  Millis ttr{0};
  std::string body;
  bool operator==(const Put&) const = default;
};
struct Use {  // use <tube>
  std::string tube;
  bool operator==(const Use&) const = default;
};
struct Reserve {  // reserve
  bool operator==(const Reserve&) const = default;
};
struct ReserveWithTimeout {  // reserve-with-timeout <seconds>
  Millis timeout{0};
  bool operator==(const ReserveWithTimeout&) const = default;
};
struct ReserveJob {  // reserve-job <id>
  std::uint64_t id = 0;
  bool operator==(const ReserveJob&) const = default;
};
struct Delete {  // delete <id>
  std::uint64_t id = 0;
  bool operator==(const Delete&) const = default;
};
struct Release {  // release <id> <pri> <delay>
  std::uint64_t id = 0;
  std::uint32_t priority = 0;
  Millis delay{0};
  bool operator==(const Release&) const = default;
};
struct Bury {  // bury <id> <pri>
  std::uint64_t id = 0;
  std::uint32_t priority = 0;
  bool operator==(const Bury&) const = default;
};
struct Touch {  // touch <id>
  std::uint64_t id = 0;
  bool operator==(const Touch&) const = default;
};
struct Watch {  // watch <tube>
  std::string tube;
  bool operator==(const Watch&) const = default;
};
struct Ignore {  // ignore <tube>
  std::string tube;
  bool operator==(const Ignore&) const = default;
};
struct Peek {  // peek <id>
  std::uint64_t id = 0;
  bool operator==(const Peek&) const = default;
};
struct PeekReady {  // peek-ready
  bool operator==(const PeekReady&) const = default;
};
struct PeekDelayed {  // peek-delayed
  bool operator==(const PeekDelayed&) const = default;
};
struct PeekBuried {  // peek-buried
  bool operator==(const PeekBuried&) const = default;
};
struct Kick {  // kick <bound>
  std::uint64_t bound = 0;
  bool operator==(const Kick&) const = default;
};
struct KickJob {  // kick-job <id>
  std::uint64_t id = 0;
  bool operator==(const KickJob&) const = default;
};
struct StatsJob {  // stats-job <id>
  std::uint64_t id = 0;
  bool operator==(const StatsJob&) const = default;
};
struct StatsTube {  // stats-tube <tube>
  std::string tube;
  bool operator==(const StatsTube&) const = default;
};
struct Stats {  // stats
  bool operator==(const Stats&) const = default;
};
struct ListTubes {  // list-tubes
  bool operator==(const ListTubes&) const = default;
};
struct ListTubeUsed {  // list-tube-used
  bool operator==(const ListTubeUsed&) const = default;
};
struct ListTubesWatched {  // list-tubes-watched
  bool operator==(const ListTubesWatched&) const = default;
};
struct Quit {  // quit: the server closes the connection, no reply
  bool operator==(const Quit&) const = default;
};
struct PauseTube {  // pause-tube <tube> <delay>
  std::string tube;
  Millis delay{0};
  bool operator==(const PauseTube&) const = default;
};

// A request the parser refused; the server sends the matching reply (beanstalk_reply.h) and
// goes on with the next request.
enum class ProtocolError : std::uint8_t {
  kBadFormat,       // BAD_FORMAT: malformed line, line over 224 bytes, bad number or tube name
  kUnknownCommand,  // UNKNOWN_COMMAND
  kExpectedCrlf,    // EXPECTED_CRLF: a put body not followed by "\r\n"
  kJobTooBig,       // JOB_TOO_BIG: a put body over the max job size (its bytes were discarded)
};

using Request = std::variant<Put, Use, Reserve, ReserveWithTimeout, ReserveJob, Delete, Release,
                             Bury, Touch, Watch, Ignore, Peek, PeekReady, PeekDelayed, PeekBuried,
                             Kick, KickJob, StatsJob, StatsTube, Stats, ListTubes, ListTubeUsed,
                             ListTubesWatched, Quit, PauseTube, ProtocolError>;

// Each command's word on the wire, in Request's order: kCommandNames[i] names alternative i
// ("put" for Put). ProtocolError, the last alternative, is no command. The parser's table of
// commands and the stats' cmd-* keys (beanstalk_stats.h) are made from these.
inline constexpr std::string_view kCommandNames[] = {"put",
                                                     "use",
                                                     "reserve",
                                                     "reserve-with-timeout",
                                                     "reserve-job",
                                                     "delete",
                                                     "release",
                                                     "bury",
                                                     "touch",
                                                     "watch",
                                                     "ignore",
                                                     "peek",
                                                     "peek-ready",
                                                     "peek-delayed",
                                                     "peek-buried",
                                                     "kick",
                                                     "kick-job",
                                                     "stats-job",
                                                     "stats-tube",
                                                     "stats",
                                                     "list-tubes",
                                                     "list-tube-used",
                                                     "list-tubes-watched",
                                                     "quit",
                                                     "pause-tube"};
static_assert(std::size(kCommandNames) + 1 == std::variant_size_v<Request>);
static_assert(
    std::is_same_v<std::variant_alternative_t<std::size(kCommandNames), Request>, ProtocolError>);

// The place of request type T among Request's alternatives.
template <class T>
inline constexpr std::size_t kRequestIndex = []<class... A>(std::variant<A...>*) {
  constexpr bool is_t[] = {std::is_same_v<T, A>...};
  std::size_t i = 0;
  while (i < sizeof...(A) && !is_t[i]) ++i;
  return i;
}(static_cast<Request*>(nullptr));

// The command word of request type T: command_name<Put>() is "put". Not for ProtocolError.
template <class T>
constexpr std::string_view command_name() {
  static_assert(kRequestIndex<T> < std::size(kCommandNames), "not a command of Request");
  return kCommandNames[kRequestIndex<T>];
}

}  // namespace wheel::jobs::beanstalk
