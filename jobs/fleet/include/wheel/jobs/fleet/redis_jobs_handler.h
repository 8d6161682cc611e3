// SPDX-License-Identifier: Apache-2.0
// RedisJobsHandler: beanstalkd's protocol on a wheel::net::TcpServer, every job kept in Redis
// through a RedisStore, so that any number of processes serve the same tubes. It is the one
// front end (BeanstalkFront: parsing, held input, replies in request order, the output bound,
// drain) over the Redis store's backend (RedisBackend: pipelined puts and deletes, leases with
// fencing tokens, waiting reserves woken by events and scans, the graceful leave).
//
// Bounds: input that arrives while a connection's requests cannot run is held, at most
// max_held_input bytes plus one job body (beyond: closed). Once the replies the kernel has not
// taken reach max_queued_output, the connection's further requests wait and its socket is not
// read until it took all but half: one connection holds at most that plus one reply, however
// it pipelines (a client that never reads just sits there).
//
// Threads: loop thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>

#include "wheel/jobs/fleet/redis_backend.h"
#include "wheel/jobs/fleet/redis_store.h"
#include "wheel/jobs/server/beanstalk_front.h"
#include "wheel/redis/redis_client.h"

namespace wheel::jobs {

namespace detail {
// Built before the front that serves it (a base class is built before the members).
struct RedisBackendHolder {
  RedisBackendHolder(RedisStore& store, RedisClient& events, RedisJobsOptions options)
      : redis_backend(store, events, std::move(options)) {}
  RedisBackend redis_backend;
};
}  // namespace detail

// The front's options for a RedisBackend with `options`.
inline BeanstalkFrontOptions redis_front_options(const RedisJobsOptions& options) {
  BeanstalkFrontOptions front;
  front.max_job_size = options.max_job_size;
  front.max_held_input = options.max_held_input + options.max_job_size;  // and one job body
  front.max_queued_output = options.max_queued_output;
  front.log_name = "wheel-jobs";
  return front;
}

class RedisJobsHandler final : private detail::RedisBackendHolder, public BeanstalkFront {
 public:
  // `store` (its client) and `events` (a second client, for SUBSCRIBE) must outlive the handler.
  // Throws std::invalid_argument for scan intervals, max_queued_output or max_in_flight_bytes out
  // of their ranges.
  RedisJobsHandler(RedisStore& store, RedisClient& events, RedisJobsOptions options)
      : detail::RedisBackendHolder(store, events, std::move(options)),
        BeanstalkFront(redis_backend, redis_front_options(redis_backend.options())) {}

  // As RedisBackend's: the commands, job changes, node counters and INTERNAL_ERRORs (metrics).
  const beanstalk::CommandCounts& commands() const { return redis_backend.commands(); }
  const QueueMetrics& metrics() const { return redis_backend.metrics(); }
  RedisJobsCounters counters() const { return redis_backend.counters(); }
  std::uint64_t internal_errors(InternalErrorCause cause) const {
    return redis_backend.internal_errors(cause);
  }
};

}  // namespace wheel::jobs
