// SPDX-License-Identifier: Apache-2.0
// Internal. What the files of RedisClient share: the state of one command in flight
// (RedisClient::Pending), an eval() waiting for its WAIT (RedisClient::Replicated), a reply
// copied out of hiredis, and the read hook that delivers one read's replies as a whole.
#pragma once

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "wheel/redis/redis_client.h"

namespace wheel::jobs {

// An eval() waiting for its WAIT: the script's reply is held until the replicas answer. Either
// may come first when both fail without a connection; the caller is answered once both came.
struct RedisClient::Replicated {
  RedisCallback done;                    // the caller's
  std::optional<RedisValue> reply;       // the script's, once it came
  std::optional<RedisValue> wait_reply;  // the last WAIT's, once it came
  int waits_left = 0;                    // WAITs sent and not answered (two after NOSCRIPT)
  bool finished = false;
  std::uint32_t replicas = 0;  // the client's options, so no callback needs the client
  std::int64_t timeout_ms = 0;

  void answer();
};

struct RedisClient::Pending {
  RedisClient* client = nullptr;
  RedisCallback done;
  std::uint64_t sent_ms = 0;
  std::uint64_t sent_ns = 0;               // uv_hrtime(): the round trip in the metrics
  std::uint64_t generation = 0;            // the connection it was sent on
  RedisScript* script = nullptr;           // eval(): resent as EVAL on NOSCRIPT
  std::vector<std::string> keys;           // eval(): KEYS, for that resend
  std::vector<std::string> args;           // eval(): ARGV, for that resend
  std::shared_ptr<Replicated> replicated;  // eval() with replicas: its WAIT follows it
};

// A hiredis reply as a RedisValue (redis_value.cc).
RedisValue copy_reply(const redisReply* r);

// One read's replies delivered as a whole (RedisClient::set_after_read): the adapter
// (redis_uv.cc) reads through it. The client outlives its context, which a callback may free.
struct RedisReadScope {
  static void read(redisAsyncContext* ac);
};

}  // namespace wheel::jobs
