// SPDX-License-Identifier: Apache-2.0
// The bytes wheel-jobs-load sends for one job operation and the replies it reads back, in two
// protocols: beanstalkd's (wheel-jobs and beanstalkd) and Redis's RESP, where a job is a Redis
// delay queue entry: one Lua script ZADDs the id by its due time and stores the body, so a put is
// one command and one reply in either protocol. The job body is the same bytes for every server.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace wheel::load {

enum class JobsProtocol : std::uint8_t { kBeanstalk, kRedis };

// "beanstalk" or "redis".
std::string_view to_string(JobsProtocol protocol);

// One reply, classified.
struct JobsReply {
  enum class Kind : std::uint8_t {
    kInserted,  // put: INSERTED id / the script's :id
    kDeleted,   // delete: DELETED / :1
    kReserved,  // reserve: RESERVED id bytes + body
    kTimedOut,  // reserve-with-timeout: TIMED_OUT or DEADLINE_SOON (nothing reserved)
    kNotFound,  // delete: NOT_FOUND / :0
    kCount,     // count: the jobs held (stats' current-jobs-* summed / ZCARD)
    kText,      // hello: a simple or bulk string (SCRIPT LOAD's sha1)
    kError,     // anything else: an error reply (OUT_OF_MEMORY, -ERR ...); `text` holds it
  };
  Kind kind = Kind::kError;
  std::uint64_t id = 0;  // kInserted, kReserved: the job id; kCount: the count
  std::string text;      // kReserved: the body; kText: the string; kError: the reply line
};

// Encodes requests for one connection. Beanstalkd's side needs no set-up; Redis's loads the
// delay queue's two scripts first (hello: load/lua/redis_put.lua, redis_delete.lua, run by
// EVALSHA) and takes their sha1s from the replies (set_script_shas).
// A value type; not shared between threads.
class JobsRequestWriter {
 public:
  explicit JobsRequestWriter(JobsProtocol protocol) : protocol_(protocol) {}

  JobsProtocol protocol() const { return protocol_; }

  // Appends what a new connection sends before any job (Redis: SCRIPT LOAD of both scripts);
  // returns how many replies (kText each) it will get: 0 for beanstalkd, 2 for Redis.
  int append_hello(std::string& out) const;
  // Redis: the sha1s the two SCRIPT LOAD replies gave, in order (put, delete).
  void set_script_shas(std::string put_sha, std::string delete_sha);

  // Appends a put of `body` (priority 0, `ttr_s`) delayed by `delay_s` whole seconds; Redis
  // stores it due at now_unix_ms + delay_s * 1000. Reply: kInserted, or kError.
  void append_put(std::string& out, std::string_view body, std::uint32_t delay_s,
                  std::uint32_t ttr_s, std::int64_t now_unix_ms) const;
  // Appends a delete of job `id`. Reply: kDeleted or kNotFound.
  void append_delete(std::string& out, std::uint64_t id) const;
  // Beanstalkd only: appends reserve-with-timeout. Reply: kReserved, kTimedOut.
  // REQUIRES: protocol() == kBeanstalk.
  void append_reserve(std::string& out, std::uint32_t timeout_s) const;
  // Appends a request for the number of jobs held (beanstalkd: stats; Redis: ZCARD).
  // Reply: kCount.
  void append_count(std::string& out) const;

 private:
  JobsProtocol protocol_;
  std::string put_sha_;
  std::string delete_sha_;
};

// Parses the byte stream of replies of one connection, however it is split. Replies come in
// the order of the requests; the parser needs to know only what kind of request each answers
// where the wire does not say (a beanstalkd OK is a stats reply only after `stats`; a Redis
// integer is an id, a deleted flag or a count). A value type; not shared between threads.
class JobsReplyParser {
 public:
  enum class Expect : std::uint8_t { kHello, kPut, kDelete, kReserve, kCount };

  // Largest reply accepted (a reserved body or a stats YAML): past it the stream is refused.
  static constexpr std::size_t kMaxReplyBytes = std::size_t{64} << 20;

  explicit JobsReplyParser(JobsProtocol protocol) : protocol_(protocol) {}

  // Appends `bytes` and parses every complete reply into `out`. `next_expect(i)` returns the
  // kind of the request the i-th reply of this call answers (i counts from 0 at each call: the
  // oldest request still unanswered before the call is i = 0); it is called at most once per
  // reply. Returns false when the stream breaks the protocol (error() says how); the
  // connection must then be closed. Replies parsed before the fault are in `out`.
  template <class NextExpect>
  bool feed(std::string_view bytes, NextExpect&& next_expect, std::vector<JobsReply>& out) {
    buffer_.append(bytes);
    const std::size_t first = out.size();
    while (pos_ < buffer_.size()) {
      if (!expect_known_) {
        expect_ = next_expect(out.size() - first);
        expect_known_ = true;
      }
      const int r = parse_one(expect_, out);
      if (r < 0) return false;
      if (r == 0) break;  // incomplete: the same expectation holds for the rest of it
      expect_known_ = false;
    }
    compact();
    return true;
  }

  const std::string& error() const { return error_; }

 private:
  // 1: one reply parsed into `out`; 0: incomplete; -1: protocol fault.
  int parse_one(Expect expect, std::vector<JobsReply>& out);
  int parse_beanstalk(Expect expect, std::vector<JobsReply>& out);
  int parse_redis(Expect expect, std::vector<JobsReply>& out);
  // The unread bytes in `rest` and their first line, without its CRLF, in `line`. Returns 1
  // when that line is whole, 0 when it is not yet, -1 (fail) when it ran past 1024 bytes.
  int next_line(std::string_view& rest, std::string_view& line);
  int fail(std::string message);
  void compact();

  JobsProtocol protocol_;
  std::string buffer_;
  std::size_t pos_ = 0;
  Expect expect_ = Expect::kPut;
  bool expect_known_ = false;
  std::string error_;
};

// The jobs held according to a beanstalkd stats YAML: current-jobs-ready + -reserved +
// -delayed + -buried (urgent jobs are counted in ready already); -1 when a field is missing.
std::int64_t jobs_held_from_stats(std::string_view yaml);

}  // namespace wheel::load
