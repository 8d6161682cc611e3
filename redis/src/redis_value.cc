// SPDX-License-Identifier: Apache-2.0
// RedisValue: what Redis answered, copied out of hiredis; and the failure names.
#include <hiredis/hiredis.h>

#include "redis_client_internal.h"
#include "wheel/redis/redis_client.h"

namespace wheel::jobs {

std::string_view redis_failure_name(RedisFailure kind) {
  switch (kind) {
    case RedisFailure::kReply:
      return "reply";
    case RedisFailure::kUnavailable:
      return "unavailable";
    case RedisFailure::kTimeout:
      return "timeout";
    case RedisFailure::kLost:
      return "lost";
  }
  return "unknown";
}

RedisValue RedisValue::error(std::string message) {
  RedisValue v;
  v.type = Type::kError;
  v.str = std::move(message);
  return v;
}

RedisValue copy_reply(const redisReply* r) {
  RedisValue v;
  switch (r->type) {
    case REDIS_REPLY_INTEGER:
      v.type = RedisValue::Type::kInteger;
      v.integer = r->integer;
      break;
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR:
      v.type = r->type == REDIS_REPLY_STRING   ? RedisValue::Type::kString
               : r->type == REDIS_REPLY_STATUS ? RedisValue::Type::kStatus
                                               : RedisValue::Type::kError;
      v.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_ARRAY:
      v.type = RedisValue::Type::kArray;
      v.elements.reserve(r->elements);
      for (std::size_t i = 0; i < r->elements; ++i) v.elements.push_back(copy_reply(r->element[i]));
      break;
    default:
      break;
  }
  return v;
}

}  // namespace wheel::jobs
