// SPDX-License-Identifier: Apache-2.0
// The replies of beanstalkd's protocol (1.12), byte for byte as beanstalkd sends them. Each
// append_* function appends one whole reply to `out` (a connection's output buffer). Bodies of
// OK replies (stats, lists) come from beanstalk_stats.h.
//
// Threads: pure functions, safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "wheel/jobs/beanstalk/beanstalk_request.h"

namespace wheel::jobs::beanstalk {

// The replies that are one fixed line.
enum class Reply : std::uint8_t {
  kOutOfMemory,     // OUT_OF_MEMORY
  kInternalError,   // INTERNAL_ERROR
  kBadFormat,       // BAD_FORMAT
  kUnknownCommand,  // UNKNOWN_COMMAND
  kExpectedCrlf,    // EXPECTED_CRLF
  kJobTooBig,       // JOB_TOO_BIG
  kDraining,        // DRAINING
  kNotFound,        // NOT_FOUND
  kDeadlineSoon,    // DEADLINE_SOON
  kTimedOut,        // TIMED_OUT
  kDeleted,         // DELETED
  kReleased,        // RELEASED
  kBuried,          // BURIED (bury, or release that had to bury: no id)
  kKicked,          // KICKED (kick-job: no count)
  kTouched,         // TOUCHED
  kPaused,          // PAUSED
  kNotIgnored,      // NOT_IGNORED
};

// The line of `reply`, "\r\n" included, e.g. "NOT_FOUND\r\n". Static storage.
std::string_view reply_line(Reply reply) noexcept;
// The reply to a refused request: BAD_FORMAT, UNKNOWN_COMMAND, EXPECTED_CRLF or JOB_TOO_BIG.
Reply reply_for(ProtocolError error) noexcept;

void append_reply(std::string& out, Reply reply);
// "INSERTED <id>\r\n"
void append_inserted(std::string& out, std::uint64_t id);
// "BURIED <id>\r\n": a put whose job had to be buried.
void append_buried_id(std::string& out, std::uint64_t id);
// "USING <tube>\r\n" (use, list-tube-used)
void append_using(std::string& out, std::string_view tube);
// "WATCHING <count>\r\n" (watch, ignore)
void append_watching(std::string& out, std::uint64_t count);
// "KICKED <count>\r\n" (kick)
void append_kicked_count(std::string& out, std::uint64_t count);

// A job sent back: RESERVED (reserve, reserve-with-timeout, reserve-job) or FOUND (peek*).
enum class JobReply : std::uint8_t { kReserved, kFound };
// "RESERVED <id> <bytes>\r\n<body>\r\n" or "FOUND ...".
void append_job(std::string& out, JobReply kind, std::uint64_t id, std::string_view body);
// Only the "RESERVED <id> <bytes>\r\n" line, for a server that writes a large body from where it
// lies (then the body, then "\r\n").
void append_job_header(std::string& out, JobReply kind, std::uint64_t id, std::uint64_t body_bytes);
// "OK <bytes>\r\n<yaml>\r\n" (stats, stats-job, stats-tube, list-tubes, list-tubes-watched).
void append_ok(std::string& out, std::string_view yaml);

}  // namespace wheel::jobs::beanstalk
