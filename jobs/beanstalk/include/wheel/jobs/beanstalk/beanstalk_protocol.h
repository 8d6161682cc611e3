// SPDX-License-Identifier: Apache-2.0
// RequestParser: beanstalkd 1.12's request stream, parsed incrementally. Bytes arrive in chunks
// of any size (one byte at a time gives the same requests as one chunk); each feed() hands out
// at most one request and says how many bytes it consumed, so a server can stop reading while a
// request is pending (a blocked reserve) and resume later with the unconsumed bytes.
//
// The rules are beanstalkd's (its protocol.txt and prot.c):
//  - a command line ends at "\r\n" and holds at most 224 bytes including them; a longer line
//    is discarded up to its "\r\n" and answered BAD_FORMAT once;
//  - arguments are separated by one or more spaces; no trailing spaces; numbers are decimal
//    digits only, without overflow: ids and kick bounds < 2^64, priorities and put's byte count
//    < 2^32, delays and TTRs <= 2^32-1 seconds, reserve-with-timeout <= 2^31-1 seconds
//    (BAD_FORMAT beyond);
//  - durations may carry up to three decimals (an extension of wheel-jobs: "put 0 0.250 60 5"
//    delays by 250 ms); integers mean whole seconds as in beanstalkd;
//  - tube names: 1 to 200 bytes of A-Z a-z 0-9 - + / ; . $ _ ( ), not starting with '-';
//  - a put body is exactly the announced bytes followed by "\r\n": EXPECTED_CRLF otherwise
//    (the announced bytes + 2 are consumed, the rest is the next command, as in beanstalkd);
//    over the max job size: the announced bytes + 2 are read and discarded, then JOB_TOO_BIG;
//  - an unknown command word is UNKNOWN_COMMAND; a known one with bad arguments BAD_FORMAT.
//
// Memory: a parser holds at most 224 bytes of command line (a fixed array, no allocation) plus
// the body of the put being read, which grows with the bytes received (never ahead of them, so
// announcing 1 GiB costs nothing until the bytes come) and is bounded by the max job size. A
// discarded body or line is counted, never stored.
//
// Threads: one parser per connection, used by one thread at a time.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "wheel/jobs/beanstalk/beanstalk_request.h"
#include "wheel/jobs/model/tube_name.h"

namespace wheel::jobs::beanstalk {

// Longest command line, "\r\n" included (beanstalkd's LINE_BUF_SIZE).
inline constexpr std::size_t kMaxLineBytes = 224;
// beanstalkd's default -z and its upper bound.
inline constexpr std::uint32_t kDefaultMaxJobSize = 65'535;
inline constexpr std::uint32_t kMaxMaxJobSize = 1'073'741'824;
// Longest delay, TTR or pause: 2^32-1 seconds; longest reserve-with-timeout: 2^31-1 seconds.
inline constexpr std::uint64_t kMaxDurationSeconds = 4'294'967'295;
inline constexpr std::uint64_t kMaxReserveTimeoutSeconds = 2'147'483'647;

// Parses one command line without its "\r\n" (a put's body is not part of it). For a put whose
// line is well formed the result is a Put with an empty body and `announced_bytes` is set to its
// byte count (checked against no limit here); otherwise `announced_bytes` is left alone. Exposed
// for tests and for servers that frame lines themselves.
Request parse_command_line(std::string_view line, std::uint32_t* announced_bytes);

class RequestParser {
 public:
  // The result of one feed(): `consumed` bytes of the input were used (all of them unless a
  // request completed first); `request` is the completed request, if any.
  struct Step {
    std::size_t consumed = 0;
    std::optional<Request> request;
  };

  // REQUIRES max_job_size <= kMaxMaxJobSize (std::invalid_argument otherwise).
  explicit RequestParser(std::uint32_t max_job_size = kDefaultMaxJobSize);

  // Consumes bytes from the front of `bytes` until one request is complete or the bytes run out.
  // Bytes not consumed belong to the next call. An empty `bytes` returns {0, nullopt}.
  // Throws std::bad_alloc if a put body cannot be stored (the parser stays usable: reset()).
  Step feed(std::string_view bytes);

  // True while a request has begun and not completed: part of a command line, a put body, or
  // bytes being discarded. A connection that ends here ended mid-request.
  bool mid_request() const noexcept;

  // Bytes the parser holds now (command line plus put body capacity); for tests and metrics.
  std::size_t buffered_bytes() const noexcept;

  // Forgets any partial request and frees the body.
  void reset() noexcept;

  std::uint32_t max_job_size() const noexcept { return max_job_size_; }

 private:
  enum class State : std::uint8_t { kLine, kDiscardLine, kBody, kDiscardBody };

  std::size_t feed_line(std::string_view bytes, std::optional<Request>& out);
  std::size_t feed_discard_line(std::string_view bytes, std::optional<Request>& out);
  std::size_t feed_body(std::string_view bytes, std::optional<Request>& out);
  std::size_t feed_discard_body(std::string_view bytes, std::optional<Request>& out);
  void start_put(Put put, std::uint32_t announced);

  std::uint32_t max_job_size_;
  State state_ = State::kLine;
  bool line_ends_in_cr_ = false;  // kLine/kDiscardLine: the last byte seen was '\r'
  std::size_t line_size_ = 0;
  std::array<char, kMaxLineBytes> line_{};
  // kBody: the put being read; body_needed_ is its announced size, trailer_ the bytes after it.
  Put put_;
  std::uint32_t body_needed_ = 0;
  std::uint8_t trailer_size_ = 0;
  std::array<char, 2> trailer_{};
  // kDiscardBody: bytes left to throw away (announced size + 2, up to 2^32 + 1).
  std::uint64_t discard_left_ = 0;
};

}  // namespace wheel::jobs::beanstalk
