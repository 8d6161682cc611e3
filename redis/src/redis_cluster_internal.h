// SPDX-License-Identifier: Apache-2.0
// Internal. What the files of RedisCluster share: one command on its way through the cluster
// (RedisCluster::Request) and its retry timer.
#pragma once

#include <uv.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "wheel/redis/redis_cluster.h"

namespace wheel::jobs {

struct RedisCluster::Request {
  std::vector<std::string> args;  // command(): the whole command; eval(): ARGV
  std::vector<std::string> keys;  // eval(): KEYS
  RedisScript* script = nullptr;  // eval()
  RedisCallback done;
  std::uint16_t slot = 0;
  std::uint64_t started_ms = 0;
  std::uint32_t redirects = 0;      // MOVED/ASK followed
  std::uint32_t retries = 0;        // backoffs waited
  std::optional<RedisAddress> ask;  // the next send: ASKING, then the command, there
  uv_timer_t* timer = nullptr;      // while waiting for a retry; its data: this request
  RedisCluster* cluster = nullptr;  // whose waiting_ owns it meanwhile
};

// A redirection reply: "MOVED 3999 127.0.0.1:6381" or "ASK 3999 127.0.0.1:6381".
struct RedisRedirect {
  bool moved = false;
  std::uint16_t slot = 0;
  RedisAddress to;
};
// Parsed from an error reply, or nullopt when it is none (or malformed).
std::optional<RedisRedirect> parse_redis_redirect(std::string_view error);

}  // namespace wheel::jobs
