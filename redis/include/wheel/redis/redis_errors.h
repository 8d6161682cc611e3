// SPDX-License-Identifier: Apache-2.0
// The error replies of Redis an operator can act on, told apart by their first word (Redis's
// error code): each has a cause name (the `cause` label of wheel_jobs_redis_errors_total) and a
// hint that says what it usually means for a wheel-jobs store. RedisClient counts and logs every
// error reply by these (docs/jobs-fleet.md, "Errors you can act on").
// Pure functions, safe from any thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace wheel::jobs {

enum class RedisErrorCause : std::uint8_t {
  kReadonly,    // READONLY: a replica
  kNoscript,    // NOSCRIPT: the script cache was flushed (resent as EVAL)
  kOom,         // OOM: maxmemory reached
  kNoauth,      // NOAUTH: a password is needed
  kWrongpass,   // WRONGPASS: the user or password is wrong
  kNoperm,      // NOPERM: the ACL user may not run a command or touch a key
  kScript,      // ERR ... user_script / Error running|compiling script: a script failed
  kMoved,       // MOVED: a Redis Cluster node, not the key's
  kAsk,         // ASK: a Redis Cluster slot being migrated
  kLoading,     // LOADING: Redis is loading its data set
  kMasterdown,  // MASTERDOWN: a replica that lost its primary (replica-serve-stale-data no)
  kBusy,        // BUSY: another script runs too long
  kTryagain,    // TRYAGAIN / CLUSTERDOWN: a cluster mid-change
  kWrongtype,   // WRONGTYPE: a key under the prefix holds another type (another program)
  kOther,       // any other error reply
};
inline constexpr std::size_t kRedisErrorCauses = 15;

// "readonly", "noscript", "oom", "noauth", "wrongpass", "noperm", "script", "moved", "ask",
// "loading", "masterdown", "busy", "tryagain", "wrongtype", "other".
inline constexpr std::array<std::string_view, kRedisErrorCauses> kRedisErrorCauseNames = {
    "readonly", "noscript", "oom",        "noauth", "wrongpass", "noperm",    "script", "moved",
    "ask",      "loading",  "masterdown", "busy",   "tryagain",  "wrongtype", "other"};

inline std::string_view redis_error_cause_name(RedisErrorCause cause) {
  return kRedisErrorCauseNames[static_cast<std::size_t>(cause)];
}

// The cause of error reply `message` (Redis's text, as "READONLY You can't write ...").
RedisErrorCause classify_redis_error(std::string_view message);

// What the cause usually means and what to do, one short clause ("the store is a read-only
// replica: point --store at the primary").
std::string_view redis_error_hint(RedisErrorCause cause);

}  // namespace wheel::jobs
