// SPDX-License-Identifier: Apache-2.0
// Why wheel-jobs answered INTERNAL_ERROR: the causes, by which both backends count those answers
// (wheel_jobs_internal_errors_total{cause}) and log them (a ReasonLog each: the first at once
// with its reason, then at most one line per cause every 10 s with a count). A log never says
// INTERNAL_ERROR for a full disk or a full Redis: those answer OUT_OF_MEMORY.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace wheel::jobs {

enum class InternalErrorCause : std::uint8_t {
  kLogFailed,         // --dir: the job log refused the change (it stopped after an I/O error)
  kBodyUnreadable,    // --dir: a job's body could not be read back from the log
  kRedisError,        // --store: Redis answered an error (by cause: wheel_jobs_redis_errors_total)
  kRedisUnavailable,  // --store: no connection, no reply in time, or the connection was lost
  kNotReplicated,     // --store-replicas: fewer replicas than asked acknowledged in time
  kBadReply,          // --store: a reply the node could not read
};
inline constexpr std::size_t kInternalErrorCauses = 6;

inline constexpr std::array<std::string_view, kInternalErrorCauses> kInternalErrorCauseNames = {
    "log_failed",        "body_unreadable", "redis_error",
    "redis_unavailable", "not_replicated",  "bad_reply"};

// The prefix of the lines about them.
inline constexpr std::string_view kInternalErrorLogPrefix = "wheel-jobs: answered INTERNAL_ERROR";

}  // namespace wheel::jobs
