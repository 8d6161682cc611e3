// SPDX-License-Identifier: Apache-2.0
// Internal to wheel::jobs: the per-connection state of RedisJobsHandler, the waiters of a tube
// and the reply of a failed store call, shared by redis_jobs_handler.cc, redis_waiters.cc and
// redis_pipeline.cc.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "wheel/jobs/beanstalk/beanstalk_protocol.h"
#include "wheel/jobs/beanstalk/beanstalk_reply.h"
#include "wheel/jobs/fleet/redis_store_results.h"
#include "wheel/loop_wheel.h"

namespace wheel::jobs {

struct RedisHandlerClient {
  RedisHandlerClient(std::uint64_t c, std::uint32_t max_job_size) : conn(c), parser(max_job_size) {}
  std::uint64_t conn;
  beanstalk::RequestParser parser;
  std::string used{"default"};
  std::vector<std::string> watched{"default"};
  std::string input;     // bytes not parsed yet
  std::string gathered;  // replies made while Redis's replies are delivered, written after them
  bool busy = false;     // a barrier request is with Redis, or its reserve waits
  // The replies of the pipelined puts and deletes in flight, in request order (redis_pipeline.cc):
  // slots[i] belongs to sequence number slots_head + i; a reply is written once every slot before
  // it is.
  struct Slot {
    bool ready = false;
    std::string reply;
    bool put = false;       // a reserve behind it waits for its reply (it may add a ready job)
    std::size_t bytes = 0;  // the put's body, with Redis until the reply (in_flight_bytes)
  };
  std::deque<Slot> slots;
  std::uint64_t slots_head = 0;
  std::size_t in_flight_bytes = 0;  // bodies of the puts with Redis (Slot::bytes)
  bool blocked = false;             // replies over max_queued_output: input paused until they drain
  // A barrier (any other request) parsed while pipelined ones were in flight: it runs once they
  // all answered.
  std::optional<beanstalk::Request> held;
  // The slot of the reserve that runs with pipelined deletes (overlaps()): finish() fills it.
  std::optional<std::uint64_t> reply_slot;
  bool pumping = false;  // pump() is on the stack: a reply that comes meanwhile does not re-enter
  bool quit = false;
  bool input_ended = false;
  bool producer = false;  // has issued a put (beanstalkd's current-producers)
  bool worker = false;    // has issued a reserve (beanstalkd's current-workers)
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
