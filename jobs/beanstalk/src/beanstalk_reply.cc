// SPDX-License-Identifier: Apache-2.0
#include "wheel/jobs/beanstalk/beanstalk_reply.h"

#include <charconv>
#include <iterator>

#include "wheel/enum_table.h"

namespace wheel::jobs::beanstalk {
namespace {

void append_number(std::string& out, std::uint64_t value) {
  char digits[24];
  const auto result = std::to_chars(digits, digits + sizeof digits, value);
  out.append(digits, result.ptr);
}

void append_word_and_number(std::string& out, std::string_view word, std::uint64_t value) {
  out.append(word);
  out.push_back(' ');
  append_number(out, value);
  out.append("\r\n");
}

std::string_view job_word(JobReply kind) noexcept {
  return kind == JobReply::kReserved ? "RESERVED" : "FOUND";
}

}  // namespace

std::string_view reply_line(Reply reply) noexcept {
  // In Reply's order; a value outside it (a cast from a bad number) reads INTERNAL_ERROR.
  constexpr std::string_view kLines[] = {
      "OUT_OF_MEMORY\r\n", "INTERNAL_ERROR\r\n", "BAD_FORMAT\r\n", "UNKNOWN_COMMAND\r\n",
      "EXPECTED_CRLF\r\n", "JOB_TOO_BIG\r\n",    "DRAINING\r\n",   "NOT_FOUND\r\n",
      "DEADLINE_SOON\r\n", "TIMED_OUT\r\n",      "DELETED\r\n",    "RELEASED\r\n",
      "BURIED\r\n",        "KICKED\r\n",         "TOUCHED\r\n",    "PAUSED\r\n",
      "NOT_IGNORED\r\n"};
  static_assert(std::size(kLines) == static_cast<std::size_t>(Reply::kNotIgnored) + 1);
  const auto i = static_cast<std::size_t>(reply);
  return i < std::size(kLines) ? kLines[i] : "INTERNAL_ERROR\r\n";
}

Reply reply_for(ProtocolError error) noexcept {
  constexpr wheel::EnumPair<ProtocolError, Reply> kReplies[] = {
      {ProtocolError::kBadFormat, Reply::kBadFormat},
      {ProtocolError::kUnknownCommand, Reply::kUnknownCommand},
      {ProtocolError::kExpectedCrlf, Reply::kExpectedCrlf},
      {ProtocolError::kJobTooBig, Reply::kJobTooBig},
  };
  return wheel::map_enum(kReplies, error, Reply::kInternalError);
}

void append_reply(std::string& out, Reply reply) {
  out.append(reply_line(reply));
}

void append_inserted(std::string& out, std::uint64_t id) {
  append_word_and_number(out, "INSERTED", id);
}

void append_buried_id(std::string& out, std::uint64_t id) {
  append_word_and_number(out, "BURIED", id);
}

void append_using(std::string& out, std::string_view tube) {
  out.append("USING ");
  out.append(tube);
  out.append("\r\n");
}

void append_watching(std::string& out, std::uint64_t count) {
  append_word_and_number(out, "WATCHING", count);
}

void append_kicked_count(std::string& out, std::uint64_t count) {
  append_word_and_number(out, "KICKED", count);
}

void append_job_header(std::string& out, JobReply kind, std::uint64_t id,
                       std::uint64_t body_bytes) {
  out.append(job_word(kind));
  out.push_back(' ');
  append_number(out, id);
  append_word_and_number(out, "", body_bytes);
}

void append_job(std::string& out, JobReply kind, std::uint64_t id, std::string_view body) {
  append_job_header(out, kind, id, body.size());
  out.append(body);
  out.append("\r\n");
}

void append_ok(std::string& out, std::string_view yaml) {
  append_word_and_number(out, "OK", yaml.size());
  out.append(yaml);
  out.append("\r\n");
}

}  // namespace wheel::jobs::beanstalk
