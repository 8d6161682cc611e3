// SPDX-License-Identifier: Apache-2.0
// RedisSentinel: finds a Redis primary through Redis Sentinel and keeps the RedisClients that
// follow() it on whichever server is the primary now.
//  - Finding: locate() asks a sentinel `SENTINEL get-master-addr-by-name MASTER`; a sentinel that
//    cannot be reached, fails, or does not know MASTER is passed over for the next one, in turn
//    (each sentinel at most once per locate()). A follower asks before each connection attempt
//    (so again after every connection failure) and confirms the answer with ROLE on the new
//    connection: a server that is not a primary is left, and the sentinels are asked again.
//  - Following: a connection to each sentinel subscribes to +switch-master; when Sentinel
//    announces a new primary for MASTER (the first sentinel to say so counts), every follower
//    drops its connection at once (the commands in flight fail: their effect is unknown, as
//    for any lost reply) and reconnects to the announced address, confirmed by ROLE. A follower
//    that is told READONLY (a primary demoted while we were connected, a missed announcement) does
//    the same. Messages sent while the subscription was down are lost: the ROLE check and READONLY
//    cover them.
// The sentinels' own connections take the sentinel password (RedisSentinelEndpoint) and no
// database; the followers log in to the primary with their own endpoint's user and password.
//
// Ownership: owns its sentinel clients (one for questions, one per sentinel for announcements);
// stop() closes them. Followers are not owned: each must stay alive until stop() (or be stopped
// first; a stopped follower is never relocated). Threads: loop thread only; callbacks run on the
// loop thread.
#pragma once

#include <uv.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "wheel/redis/redis_client.h"
#include "wheel/redis/redis_endpoint.h"

namespace wheel::jobs {

struct RedisSentinelOptions {
  RedisSentinelEndpoint endpoint;
  // Per question to a sentinel, and per connection attempt to one (a black-holed sentinel is
  // passed over after this long).
  std::chrono::milliseconds command_timeout{1000};  // REQUIRES > 0
  std::chrono::milliseconds min_backoff{50};        // REQUIRES > 0
  std::chrono::milliseconds max_backoff{1000};      // REQUIRES >= min_backoff
  std::string name = "redis sentinel";              // in log lines
};

// What the discovery counts for a scrape. Loop thread only.
struct RedisSentinelMetrics {
  std::uint64_t asks = 0;          // get-master-addr-by-name questions answered with an address
  std::uint64_t ask_failures = 0;  // questions a sentinel failed (unreachable, error, unknown)
  std::uint64_t switches = 0;      // +switch-master announcements for MASTER
};

class RedisSentinel {
 public:
  using Located = std::function<void(std::optional<RedisAddress> primary, std::string error)>;

  // Throws std::invalid_argument for an endpoint without sentinels or master, or options out
  // of range. Does not connect yet.
  RedisSentinel(uv_loop_t* loop, RedisSentinelOptions options);
  ~RedisSentinel();  // REQUIRES: stop() was called and the loop ran since
  RedisSentinel(const RedisSentinel&) = delete;
  RedisSentinel& operator=(const RedisSentinel&) = delete;

  // Connects to the sentinels (the question connection and the subscription).
  void start();
  // Closes both; a locate() in progress fails. Idempotent.
  void stop();

  // Makes `client` follow the primary: its every connection attempt goes where locate() says,
  // ROLE confirms it, and +switch-master or READONLY moves it. Call before client.start().
  // `client` must not be stopped while this is running (stop it after, or before, stop()).
  void follow(RedisClient& client);

  // Asks the sentinels in turn for MASTER's address; `done` gets it, or nullopt and the last
  // sentinel's reason once each was asked once. Never calls `done` from inside this call.
  void locate(Located done);

  const RedisSentinelMetrics& metrics() const { return metrics_; }
  // The sentinels' error replies by cause (a refused AUTH: wrongpass, noauth), on both
  // connections; each is logged once with the sentinel's message, as any client's.
  std::array<std::uint64_t, kRedisErrorCauses> errors() const;
  const RedisSentinelOptions& options() const { return options_; }

 private:
  struct Ask;
  void ask(std::shared_ptr<Ask> ask);
  void on_switch(std::string_view message);

  RedisSentinelOptions options_;
  std::unique_ptr<RedisClient> ask_;                   // questions, to one sentinel at a time
  std::vector<std::unique_ptr<RedisClient>> watches_;  // one per sentinel: +switch-master
  std::size_t next_ask_ = 0;  // the sentinel the question connection tries next
  RedisAddress announced_;    // the latest +switch-master's new primary
  std::vector<RedisClient*> followers_;
  RedisSentinelMetrics metrics_;
  bool stopped_ = false;
};

}  // namespace wheel::jobs
