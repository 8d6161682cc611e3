// SPDX-License-Identifier: Apache-2.0
#include "wheel/load/jobs_wire.h"

#include <cassert>
#include <charconv>

#include "jobs_wire_lua.h"

namespace wheel::load {

namespace {

constexpr std::string_view kCrlf = "\r\n";

void append_number(std::string& out, std::uint64_t n) {
  char digits[24];
  const auto r = std::to_chars(digits, digits + sizeof digits, n);
  out.append(digits, r.ptr);
}

void append_signed(std::string& out, std::int64_t n) {
  char digits[24];
  const auto r = std::to_chars(digits, digits + sizeof digits, n);
  out.append(digits, r.ptr);
}

// A RESP bulk string: $len\r\nbytes\r\n.
void append_bulk(std::string& out, std::string_view bytes) {
  out += '$';
  append_number(out, bytes.size());
  out += kCrlf;
  out += bytes;
  out += kCrlf;
}

// A RESP array of bulk strings (the only request form Redis needs to accept any bytes).
void append_command(std::string& out, std::initializer_list<std::string_view> args) {
  out += '*';
  append_number(out, args.size());
  out += kCrlf;
  for (std::string_view a : args) append_bulk(out, a);
}

std::string number_text(std::int64_t n) {
  std::string s;
  append_signed(s, n);
  return s;
}

// Parses a whole unsigned decimal token; false when it is not one.
bool parse_u64(std::string_view text, std::uint64_t& value) {
  if (text.empty()) return false;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), value);
  return r.ec == std::errc() && r.ptr == text.data() + text.size();
}

bool parse_i64(std::string_view text, std::int64_t& value) {
  if (text.empty()) return false;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), value);
  return r.ec == std::errc() && r.ptr == text.data() + text.size();
}

}  // namespace

std::string_view to_string(JobsProtocol protocol) {
  return protocol == JobsProtocol::kBeanstalk ? "beanstalk" : "redis";
}

int JobsRequestWriter::append_hello(std::string& out) const {
  if (protocol_ == JobsProtocol::kBeanstalk) return 0;
  append_command(out, {"SCRIPT", "LOAD", lua::kRedisPut});
  append_command(out, {"SCRIPT", "LOAD", lua::kRedisDelete});
  return 2;
}

void JobsRequestWriter::set_script_shas(std::string put_sha, std::string delete_sha) {
  put_sha_ = std::move(put_sha);
  delete_sha_ = std::move(delete_sha);
}

void JobsRequestWriter::append_put(std::string& out, std::string_view body, std::uint32_t delay_s,
                                   std::uint32_t ttr_s, std::int64_t now_unix_ms) const {
  if (protocol_ == JobsProtocol::kBeanstalk) {
    out += "put 0 ";
    append_number(out, delay_s);
    out += ' ';
    append_number(out, ttr_s);
    out += ' ';
    append_number(out, body.size());
    out += kCrlf;
    out += body;
    out += kCrlf;
    return;
  }
  const std::string due = number_text(now_unix_ms + std::int64_t{delay_s} * 1000);
  append_command(out, {"EVALSHA", put_sha_, "3", "wjl:id", "wjl:due", "wjl:body", due, body});
}

void JobsRequestWriter::append_delete(std::string& out, std::uint64_t id) const {
  if (protocol_ == JobsProtocol::kBeanstalk) {
    out += "delete ";
    append_number(out, id);
    out += kCrlf;
    return;
  }
  std::string text;
  append_number(text, id);
  append_command(out, {"EVALSHA", delete_sha_, "3", "wjl:id", "wjl:due", "wjl:body", text});
}

void JobsRequestWriter::append_reserve(std::string& out, std::uint32_t timeout_s) const {
  assert(protocol_ == JobsProtocol::kBeanstalk);
  out += "reserve-with-timeout ";
  append_number(out, timeout_s);
  out += kCrlf;
}

void JobsRequestWriter::append_count(std::string& out) const {
  if (protocol_ == JobsProtocol::kBeanstalk) {
    out += "stats\r\n";
  } else {
    append_command(out, {"ZCARD", "wjl:due"});
  }
}

int JobsReplyParser::fail(std::string message) {
  error_ = std::move(message);
  return -1;
}

void JobsReplyParser::compact() {
  if (pos_ == buffer_.size()) {
    buffer_.clear();
    pos_ = 0;
  } else if (pos_ > (std::size_t{1} << 16)) {
    buffer_.erase(0, pos_);
    pos_ = 0;
  }
}

int JobsReplyParser::parse_one(Expect expect, std::vector<JobsReply>& out) {
  return protocol_ == JobsProtocol::kBeanstalk ? parse_beanstalk(expect, out)
                                               : parse_redis(expect, out);
}

int JobsReplyParser::next_line(std::string_view& rest, std::string_view& line) {
  rest = std::string_view(buffer_).substr(pos_);
  const std::size_t eol = rest.find(kCrlf);
  if (eol == std::string_view::npos) {
    return rest.size() > 1024 ? fail("a reply line longer than 1024 bytes") : 0;
  }
  line = rest.substr(0, eol);
  return 1;
}

int JobsReplyParser::parse_beanstalk(Expect expect, std::vector<JobsReply>& out) {
  std::string_view rest, line;
  if (const int whole = next_line(rest, line); whole <= 0) return whole;
  const std::size_t space = line.find(' ');
  const std::string_view word = line.substr(0, space);
  const std::string_view args = space == std::string_view::npos ? "" : line.substr(space + 1);
  JobsReply reply;
  std::size_t used = line.size() + 2;
  if (word == "INSERTED" && expect == Expect::kPut) {
    reply.kind = JobsReply::Kind::kInserted;
    if (!parse_u64(args, reply.id)) return fail("bad INSERTED line: " + std::string(line));
  } else if (word == "DELETED" && expect == Expect::kDelete) {
    reply.kind = JobsReply::Kind::kDeleted;
  } else if (word == "NOT_FOUND" && expect == Expect::kDelete) {
    reply.kind = JobsReply::Kind::kNotFound;
  } else if ((word == "TIMED_OUT" || word == "DEADLINE_SOON") && expect == Expect::kReserve) {
    reply.kind = JobsReply::Kind::kTimedOut;
  } else if ((word == "RESERVED" && expect == Expect::kReserve) ||
             (word == "OK" && expect == Expect::kCount)) {
    // Both carry a body: "RESERVED id bytes" / "OK bytes", then bytes and CRLF.
    std::uint64_t bytes = 0;
    const std::size_t last = args.rfind(' ');
    const std::string_view count = last == std::string_view::npos ? args : args.substr(last + 1);
    if (!parse_u64(count, bytes) || bytes > kMaxReplyBytes) {
      return fail("bad reply line: " + std::string(line));
    }
    if (word == "RESERVED" &&
        (last == std::string_view::npos || !parse_u64(args.substr(0, last), reply.id))) {
      return fail("bad RESERVED line: " + std::string(line));
    }
    if (rest.size() < used + bytes + 2) return 0;
    if (rest.substr(used + bytes, 2) != kCrlf) return fail("a reply body without its CRLF");
    const std::string_view body = rest.substr(used, bytes);
    used += bytes + 2;
    if (word == "RESERVED") {
      reply.kind = JobsReply::Kind::kReserved;
      reply.text.assign(body);
    } else {
      const std::int64_t held = jobs_held_from_stats(body);
      if (held < 0) return fail("a stats reply without current-jobs-* fields");
      reply.kind = JobsReply::Kind::kCount;
      reply.id = static_cast<std::uint64_t>(held);
    }
  } else {
    reply.kind = JobsReply::Kind::kError;
    reply.text.assign(line);
  }
  pos_ += used;
  out.push_back(std::move(reply));
  return 1;
}

int JobsReplyParser::parse_redis(Expect expect, std::vector<JobsReply>& out) {
  std::string_view rest, line;
  if (const int whole = next_line(rest, line); whole <= 0) return whole;
  if (line.empty()) return fail("an empty reply line");
  JobsReply reply;
  std::size_t used = line.size() + 2;
  const std::string_view value = line.substr(1);
  switch (line[0]) {
    case '+':
      reply.kind = expect == Expect::kHello ? JobsReply::Kind::kText : JobsReply::Kind::kError;
      reply.text.assign(value);
      break;
    case '-':
      reply.kind = JobsReply::Kind::kError;
      reply.text.assign(value);
      break;
    case ':': {
      std::int64_t n = 0;
      if (!parse_i64(value, n) || n < 0) return fail("bad integer reply: " + std::string(line));
      reply.id = static_cast<std::uint64_t>(n);
      switch (expect) {
        case Expect::kPut:
          reply.kind = JobsReply::Kind::kInserted;
          break;
        case Expect::kDelete:
          reply.kind = n > 0 ? JobsReply::Kind::kDeleted : JobsReply::Kind::kNotFound;
          break;
        case Expect::kCount:
          reply.kind = JobsReply::Kind::kCount;
          break;
        default:
          reply.kind = JobsReply::Kind::kError;
          reply.text.assign(line);
      }
      break;
    }
    case '$': {
      std::int64_t n = 0;
      if (!parse_i64(value, n) || n < -1 || n > static_cast<std::int64_t>(kMaxReplyBytes)) {
        return fail("bad bulk reply: " + std::string(line));
      }
      const std::size_t bytes = n < 0 ? 0 : static_cast<std::size_t>(n);
      if (n >= 0) {
        if (rest.size() < used + bytes + 2) return 0;
        if (rest.substr(used + bytes, 2) != kCrlf) return fail("a bulk reply without its CRLF");
        reply.text.assign(rest.substr(used, bytes));
        used += bytes + 2;
      }
      reply.kind =
          expect == Expect::kHello && n >= 0 ? JobsReply::Kind::kText : JobsReply::Kind::kError;
      break;
    }
    default:
      return fail("unexpected reply: " + std::string(line.substr(0, 64)));
  }
  pos_ += used;
  out.push_back(std::move(reply));
  return 1;
}

std::int64_t jobs_held_from_stats(std::string_view yaml) {
  constexpr std::string_view kFields[] = {"current-jobs-ready: ", "current-jobs-reserved: ",
                                          "current-jobs-delayed: ", "current-jobs-buried: "};
  std::int64_t sum = 0;
  for (std::string_view field : kFields) {
    std::size_t at = yaml.find(field);
    // A field name must start a line ("\ncurrent-jobs-ready"), not end a longer name.
    while (at != std::string_view::npos && at > 0 && yaml[at - 1] != '\n') {
      at = yaml.find(field, at + 1);
    }
    if (at == std::string_view::npos) return -1;
    const std::size_t start = at + field.size();
    const std::size_t end = yaml.find('\n', start);
    std::uint64_t n = 0;
    if (!parse_u64(yaml.substr(start, end == std::string_view::npos ? end : end - start), n)) {
      return -1;
    }
    sum += static_cast<std::int64_t>(n);
  }
  return sum;
}

}  // namespace wheel::load
