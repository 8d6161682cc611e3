// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: beanstalkd's request parser (wheel/jobs/beanstalk_protocol.h) as a hostile
// client drives it. The input is a header (max job size, where to cut the stream into reads)
// and then the stream. Checked: never a crash; every feed consumes at least one byte of a
// non-empty input; the requests from cut reads equal the requests from one read; the parser
// never holds more than a command line plus the max job size; every request respects the
// protocol's limits (tube names valid, durations in range, bodies within the max job size).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "wheel/jobs/beanstalk/beanstalk_protocol.h"
#include "wheel/jobs/beanstalk/beanstalk_reply.h"

namespace {

using namespace wheel::jobs;
using namespace wheel::jobs::beanstalk;

void check(bool ok) {
  if (!ok) std::abort();
}

void check_limits(const Request& request, std::uint32_t max_job_size) {
  std::visit(
      [&](const auto& r) {
        using T = std::decay_t<decltype(r)>;
        const Millis longest(static_cast<Millis::rep>(kMaxDurationSeconds * 1000));
        if constexpr (std::is_same_v<T, Put>) {
          check(r.body.size() <= max_job_size);
          check(r.delay.count() >= 0 && r.delay <= longest);
          check(r.ttr.count() >= 0 && r.ttr <= longest);
        } else if constexpr (std::is_same_v<T, Release>) {
          check(r.delay.count() >= 0 && r.delay <= longest);
        } else if constexpr (std::is_same_v<T, PauseTube>) {
          check(is_valid_tube_name(r.tube));
          check(r.delay.count() >= 0 && r.delay <= longest);
        } else if constexpr (std::is_same_v<T, ReserveWithTimeout>) {
          check(r.timeout.count() >= 0 &&
                r.timeout.count() <= static_cast<Millis::rep>(kMaxReserveTimeoutSeconds * 1000));
        } else if constexpr (std::is_same_v<T, Use> || std::is_same_v<T, Watch> ||
                             std::is_same_v<T, Ignore> || std::is_same_v<T, StatsTube>) {
          check(is_valid_tube_name(r.tube));
        } else if constexpr (std::is_same_v<T, ProtocolError>) {
          check(!reply_line(reply_for(r)).empty());
        }
      },
      request);
}

std::vector<Request> parse(std::string_view stream, std::uint32_t max_job_size, unsigned cut_seed) {
  RequestParser parser(max_job_size);
  std::vector<Request> requests;
  unsigned state = cut_seed | 1u;
  while (!stream.empty()) {
    std::size_t cut = stream.size();
    if (cut_seed != 0) {
      state = state * 1103515245u + 12345u;  // cheap deterministic cut points
      cut = 1 + (state >> 16) % 64;
    }
    std::string_view piece = stream.substr(0, cut);
    stream.remove_prefix(piece.size());
    while (!piece.empty()) {
      RequestParser::Step step = parser.feed(piece);
      check(step.consumed > 0 && step.consumed <= piece.size());
      piece.remove_prefix(step.consumed);
      check(parser.buffered_bytes() <= kMaxLineBytes + 2 * std::size_t{max_job_size} + 64);
      if (step.request) {
        check_limits(*step.request, max_job_size);
        requests.push_back(std::move(*step.request));
      }
    }
  }
  return requests;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  // Byte 0: max job size (0..255 bytes, small so bodies both fit and overflow); byte 1: cut
  // seed (0 = the chunked run also feeds in one piece); rest: the stream.
  const std::uint32_t max_job_size = data[0];
  const unsigned seed = data[1];
  const std::string_view stream(reinterpret_cast<const char*>(data + 2), size - 2);
  const std::vector<Request> whole = parse(stream, max_job_size, 0);
  const std::vector<Request> cut = parse(stream, max_job_size, seed + 1);
  check(whole == cut);
  return 0;
}
