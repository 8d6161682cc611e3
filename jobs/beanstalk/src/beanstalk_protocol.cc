// SPDX-License-Identifier: Apache-2.0
#include "wheel/jobs/beanstalk/beanstalk_protocol.h"

#include <algorithm>
#include <iterator>
#include <stdexcept>
#include <utility>

namespace wheel::jobs::beanstalk {

RequestParser::RequestParser(std::uint32_t max_job_size) : max_job_size_(max_job_size) {
  if (max_job_size > kMaxMaxJobSize) {
    throw std::invalid_argument("RequestParser: max_job_size must be at most 1073741824");
  }
}

RequestParser::Step RequestParser::feed(std::string_view bytes) {
  // Each state's step, in State's order.
  using Feeder = std::size_t (RequestParser::*)(std::string_view, std::optional<Request>&);
  static constexpr Feeder kFeeders[] = {
      &RequestParser::feed_line, &RequestParser::feed_discard_line, &RequestParser::feed_body,
      &RequestParser::feed_discard_body};
  static_assert(std::size(kFeeders) == static_cast<std::size_t>(State::kDiscardBody) + 1);
  Step step;
  // Each state consumes what it can; a state change without a request continues in the next
  // state with the rest (a line into its body, a discarded line into the next line).
  while (step.consumed < bytes.size() && !step.request) {
    const Feeder feed_state = kFeeders[static_cast<std::size_t>(state_)];
    step.consumed += (this->*feed_state)(bytes.substr(step.consumed), step.request);
  }
  return step;
}

std::size_t RequestParser::feed_line(std::string_view bytes, std::optional<Request>& out) {
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const char c = bytes[i];
    if (c == '\n' && line_ends_in_cr_) {
      const std::string_view line(line_.data(), line_size_ - 1);  // without its '\r'
      std::uint32_t announced = 0;
      Request request = parse_command_line(line, &announced);
      line_size_ = 0;
      line_ends_in_cr_ = false;
      if (auto* put = std::get_if<Put>(&request)) {
        start_put(std::move(*put), announced);
        return i + 1;
      }
      out = std::move(request);
      return i + 1;
    }
    // Room for 222 bytes and the "\r": a byte that would be the 224th without ending the line
    // means the line is too long. Discard up to its end, then say BAD_FORMAT once.
    if (line_size_ == kMaxLineBytes - 1) {
      state_ = State::kDiscardLine;
      line_size_ = 0;
      line_ends_in_cr_ = (c == '\r');
      return i + 1;
    }
    line_[line_size_++] = c;
    line_ends_in_cr_ = (c == '\r');
  }
  return bytes.size();
}

std::size_t RequestParser::feed_discard_line(std::string_view bytes, std::optional<Request>& out) {
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const char c = bytes[i];
    if (c == '\n' && line_ends_in_cr_) {
      state_ = State::kLine;
      line_ends_in_cr_ = false;
      out = ProtocolError::kBadFormat;
      return i + 1;
    }
    line_ends_in_cr_ = (c == '\r');
  }
  return bytes.size();
}

void RequestParser::start_put(Put put, std::uint32_t announced) {
  if (announced > max_job_size_) {
    // As beanstalkd: the body and its "\r\n" are read and thrown away, then JOB_TOO_BIG.
    state_ = State::kDiscardBody;
    discard_left_ = std::uint64_t{announced} + 2;
    return;
  }
  state_ = State::kBody;
  put_ = std::move(put);
  body_needed_ = announced;
  trailer_size_ = 0;
}

std::size_t RequestParser::feed_body(std::string_view bytes, std::optional<Request>& out) {
  std::size_t used = 0;
  std::string& body = put_.body;
  if (body.size() < body_needed_) {
    const std::size_t take = std::min<std::size_t>(bytes.size(), body_needed_ - body.size());
    // Grow with the bytes received, never past the announced size.
    const std::size_t want = body.size() + take;
    if (want > body.capacity()) {
      body.reserve(std::min<std::size_t>(body_needed_, std::max(want, 2 * body.capacity())));
    }
    body.append(bytes.data(), take);
    used = take;
  }
  while (body.size() == body_needed_ && trailer_size_ < 2 && used < bytes.size()) {
    trailer_[trailer_size_++] = bytes[used++];
  }
  if (trailer_size_ == 2) {
    if (trailer_[0] == '\r' && trailer_[1] == '\n') {
      out = std::move(put_);
    } else {
      out = ProtocolError::kExpectedCrlf;
    }
    put_ = Put{};
    body_needed_ = 0;
    trailer_size_ = 0;
    state_ = State::kLine;
  }
  return used;
}

std::size_t RequestParser::feed_discard_body(std::string_view bytes, std::optional<Request>& out) {
  const std::size_t take =
      static_cast<std::size_t>(std::min<std::uint64_t>(bytes.size(), discard_left_));
  discard_left_ -= take;
  if (discard_left_ == 0) {
    state_ = State::kLine;
    out = ProtocolError::kJobTooBig;
  }
  return take;
}

bool RequestParser::mid_request() const noexcept {
  return state_ != State::kLine || line_size_ > 0;
}

std::size_t RequestParser::buffered_bytes() const noexcept {
  return line_size_ + (state_ == State::kBody ? put_.body.capacity() : 0);
}

void RequestParser::reset() noexcept {
  state_ = State::kLine;
  line_ends_in_cr_ = false;
  line_size_ = 0;
  put_ = Put{};
  body_needed_ = 0;
  trailer_size_ = 0;
  discard_left_ = 0;
}

}  // namespace wheel::jobs::beanstalk
