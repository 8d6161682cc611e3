// SPDX-License-Identifier: Apache-2.0
#include "wheel/redis/redis_errors.h"

namespace wheel::jobs {

namespace {

struct Code {
  std::string_view word;
  RedisErrorCause cause;
};

// Redis's error codes (the reply's first word) and their causes; "ERR" is looked at further.
constexpr Code kCodes[] = {
    {"READONLY", RedisErrorCause::kReadonly},
    {"NOSCRIPT", RedisErrorCause::kNoscript},
    {"OOM", RedisErrorCause::kOom},
    {"NOAUTH", RedisErrorCause::kNoauth},
    {"WRONGPASS", RedisErrorCause::kWrongpass},
    {"NOPERM", RedisErrorCause::kNoperm},
    {"MOVED", RedisErrorCause::kMoved},
    {"ASK", RedisErrorCause::kAsk},
    {"LOADING", RedisErrorCause::kLoading},
    {"MASTERDOWN", RedisErrorCause::kMasterdown},
    {"BUSY", RedisErrorCause::kBusy},
    {"TRYAGAIN", RedisErrorCause::kTryagain},
    {"CLUSTERDOWN", RedisErrorCause::kTryagain},
    {"WRONGTYPE", RedisErrorCause::kWrongtype},
};

}  // namespace

RedisErrorCause classify_redis_error(std::string_view message) {
  const std::string_view word = message.substr(0, message.find(' '));
  for (const Code& code : kCodes) {
    if (word == code.word) return code.cause;
  }
  // A script's own failure: a Lua error, a bad call from Lua, or a script that did not compile
  // (Redis 7: "... script: <sha>, on @user_script:N."; Redis 6: "Error running script ...").
  if (word == "ERR" && (message.find("user_script") != std::string_view::npos ||
                        message.find("Error running script") != std::string_view::npos ||
                        message.find("Error compiling script") != std::string_view::npos)) {
    return RedisErrorCause::kScript;
  }
  return RedisErrorCause::kOther;
}

std::string_view redis_error_hint(RedisErrorCause cause) {
  switch (cause) {
    case RedisErrorCause::kReadonly:
      return "the store is a read-only replica: point --store at the primary (through "
             "redis-sentinel://, the node asks Sentinel again)";
    case RedisErrorCause::kNoscript:
      return "Redis forgot the scripts (SCRIPT FLUSH, a restart, a proxy in front of several "
             "servers): resent as EVAL; many of these mean they keep being lost";
    case RedisErrorCause::kOom:
      return "Redis reached maxmemory: puts answer OUT_OF_MEMORY; delete jobs or raise it";
    case RedisErrorCause::kNoauth:
      return "Redis needs a password: give it in the --store URL (a sentinel's: "
             "--store-sentinel-password)";
    case RedisErrorCause::kWrongpass:
      return "Redis refused the user or password of the --store URL (a sentinel's: "
             "--store-sentinel-password)";
    case RedisErrorCause::kNoperm:
      return "the ACL user of the --store URL may not run the store's commands or keys";
    case RedisErrorCause::kScript:
      return "a store script failed inside Redis (a bug, or keys changed by another program)";
    case RedisErrorCause::kMoved:
    case RedisErrorCause::kAsk:
      return "a Redis Cluster node sent the command elsewhere: a redis:// store does not follow "
             "that (a cluster client does, and counts it)";
    case RedisErrorCause::kLoading:
      return "Redis is loading its data set after a restart: wait";
    case RedisErrorCause::kMasterdown:
      return "the store is a replica that lost its primary";
    case RedisErrorCause::kBusy:
      return "a script runs too long in Redis (SCRIPT KILL, or check lua-time-limit)";
    case RedisErrorCause::kTryagain:
      return "the Redis Cluster is changing: retry";
    case RedisErrorCause::kWrongtype:
      return "a key under the store's prefix holds another type: another program uses it";
    case RedisErrorCause::kOther:
      break;
  }
  return "see Redis's message";
}

}  // namespace wheel::jobs
