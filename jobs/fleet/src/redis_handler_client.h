// SPDX-License-Identifier: Apache-2.0
// Internal to wheel::jobs: the per-connection state of RedisBackend and the waiters of a tube,
// shared by redis_backend.cc, redis_dispatch.cc, redis_waiters.cc and redis_pipeline.cc.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "wheel/jobs/beanstalk/beanstalk_reply.h"
#include "wheel/jobs/fleet/redis_store_results.h"
#include "wheel/jobs/server/beanstalk_backend.h"
#include "wheel/jobs/server/session_tubes.h"
#include "wheel/loop_wheel.h"

namespace wheel::jobs {

struct RedisHandlerClient {
  RedisHandlerClient(std::uint64_t c, const SessionTubes& t) : conn(c), tubes(t) {}
  std::uint64_t conn;
  const SessionTubes& tubes;  // the front's: the tube used and those watched
  const std::string& used() const { return tubes.used(); }
  const std::vector<std::string>& watched() const { return tubes.watched(); }
  bool busy = false;               // a barrier request is with Redis, or its reserve waits
  ReplySlot slot;                  // that request's reply (finish())
  std::size_t puts_in_flight = 0;  // a reserve waits for their replies (they may add a job)
  bool producer = false;           // has issued a put (beanstalkd's current-producers)
  bool worker = false;             // has issued a reserve (beanstalkd's current-workers)
  struct Lease {
    std::uint64_t token = 0;
    std::int64_t end_local = 0;  // local ms
    std::uint32_t priority = 0;
  };
  std::unordered_map<std::uint64_t, Lease> leases;  // jobs this connection reserved
  // The reserve that waits (busy meanwhile).
  bool waiting = false;
  bool attempting = false;  // a claim script is in flight for it
  bool wake_again = false;  // woken while attempting: try once more
  bool deadline_soon = false;
  bool timed_out = false;
  bool forever = true;
  std::uint64_t wait_seq = 0;
  LoopWheel::Handle timeout_timer, soon_timer;
  std::int64_t retry_at = -1;  // local ms of its retry group, if in one
};

struct RedisTubeWaiters {
  std::deque<std::pair<std::uint64_t, std::uint64_t>> queue;  // (conn, wait_seq), FIFO, lazy
  std::uint64_t live = 0;                                     // entries still waiting
  LoopWheel::Handle timer;                                    // next due of the tube
  std::int64_t timer_at = -1;                                 // local ms
  // Local ms until which this node knows the tube has no ready job (-1: not known): a claim's
  // answer said so and when the next comes due, the tube timer is set for then, and no event,
  // scan or claim said otherwise since.
  std::int64_t empty_until = -1;
};

}  // namespace wheel::jobs
