// SPDX-License-Identifier: Apache-2.0
// /metrics of a fleet node (--store): the shared families of jobs_metrics.cc plus the Redis
// clients' own.
#include <array>
#include <cstddef>
#include <string_view>

#include "jobs_metrics.h"

namespace wheel::jobs_app {

namespace {

// The changes a fleet node makes itself. Delay ends and timeouts happen inside Redis's scripts
// (on no node in particular): wheel_jobs_job_timeouts_total counts those fleet-wide.
constexpr std::array<jobs::ChangeCounter, 8> kNodeChanges = {
    jobs::ChangeCounter::kPut,   jobs::ChangeCounter::kReserve, jobs::ChangeCounter::kRelease,
    jobs::ChangeCounter::kBury,  jobs::ChangeCounter::kKick,    jobs::ChangeCounter::kDelete,
    jobs::ChangeCounter::kTouch, jobs::ChangeCounter::kHangUp};

void render_clients(server::PrometheusText& text, const jobs::RedisClient& commands,
                    const jobs::RedisClient& events, const jobs::RedisSentinel* sentinel) {
  const auto sentinel_errors = sentinel != nullptr
                                   ? sentinel->errors()
                                   : std::array<std::uint64_t, jobs::kRedisErrorCauses>{};
  const jobs::RedisClientMetrics& m = commands.metrics();
  text.histogram("wheel_jobs_redis_round_trip_seconds",
                 "Redis commands (scripts) from sent to answered, on the commands connection.",
                 jobs::kRedisRoundTripBounds, m.round_trip.read());
  text.family("wheel_jobs_redis_failures_total", "counter",
              "Redis commands that failed, by kind: reply (Redis's error), unavailable (no "
              "connection: failed at once), timeout, lost (connection lost in flight).");
  for (std::size_t i = 0; i < jobs::kRedisFailureKinds; ++i) {
    const auto kind = static_cast<jobs::RedisFailure>(i);
    text.sample("wheel_jobs_redis_failures_total", {{"kind", jobs::redis_failure_name(kind)}},
                m.failed(kind));
  }
  text.family("wheel_jobs_redis_errors_total", "counter",
              "Error replies from Redis, by cause (READONLY: readonly, ...; both connections, "
              "and the sentinels'), each logged with Redis's message, at most one line per "
              "cause every 10 s.");
  for (std::size_t i = 0; i < jobs::kRedisErrorCauses; ++i) {
    text.sample("wheel_jobs_redis_errors_total", {{"cause", jobs::kRedisErrorCauseNames[i]}},
                m.errors[i] + events.metrics().errors[i] + sentinel_errors[i]);
  }
  text.series("wheel_jobs_redis_reconnects_total", "counter",
              "Connections to Redis made again after a loss, by connection.", "connection",
              {{"commands", m.reconnects}, {"events", events.metrics().reconnects}});
  text.series(
      "wheel_jobs_redis_connected", "gauge", "1 while the connection to Redis is up.", "connection",
      {{"commands", commands.connected() ? 1u : 0u}, {"events", events.connected() ? 1u : 0u}});
}

// redis-sentinel:// only: how the node found and followed the primary.
void render_sentinel(server::PrometheusText& text, const jobs::RedisSentinel& sentinel,
                     const jobs::RedisClient& commands, const jobs::RedisClient& events) {
  const jobs::RedisSentinelMetrics& m = sentinel.metrics();
  text.series("wheel_jobs_redis_sentinel_asks_total", "counter",
              "Questions to a sentinel for the primary's address (get-master-addr-by-name), by "
              "result: ok, failed (unreachable, an error, or an unknown name: the next sentinel "
              "is asked).",
              "result", {{"ok", m.asks}, {"failed", m.ask_failures}});
  text.counter("wheel_jobs_redis_sentinel_switches_total",
               "+switch-master announcements for this node's primary (a failover).", m.switches);
  text.series(
      "wheel_jobs_redis_relocations_total", "counter",
      "Connections dropped to ask where the primary is now (Sentinel announced a new "
      "one, or Redis answered READONLY), by connection.",
      "connection",
      {{"commands", commands.metrics().relocations}, {"events", events.metrics().relocations}});
  text.series(
      "wheel_jobs_redis_not_primary_total", "counter",
      "Connections left because ROLE showed the server the sentinels named is not a "
      "primary (yet), by connection.",
      "connection",
      {{"commands", commands.metrics().not_primary}, {"events", events.metrics().not_primary}});
}

}  // namespace

std::string render_redis_metrics(const jobs::RedisJobsHandler& handler,
                                 const jobs::StoreTotals* totals, const jobs::RedisClient& commands,
                                 const jobs::RedisClient& events,
                                 const jobs::RedisSentinel* sentinel,
                                 const net::TcpServerCounters& io) {
  server::PrometheusText text;
  text.gauge("wheel_jobs_redis_counts_read",
             "1 when this scrape read the fleet's job counts from Redis (0: Redis unavailable, "
             "the job families are left out).",
             totals != nullptr ? 1 : 0);
  if (totals != nullptr) render_job_counts(text, *totals);
  render_commands(text, handler.commands());
  const jobs::RedisJobsCounters c = handler.counters();
  text.gauge("wheel_jobs_connections", "Client connections open.", c.connections);
  text.gauge("wheel_jobs_waiting", "Clients blocked in a reserve.", c.waiting);
  render_client_io(text, io);
  render_changes(text, handler.metrics(), kNodeChanges);
  render_clients(text, commands, events, sentinel);
  if (sentinel != nullptr) render_sentinel(text, *sentinel, commands, events);
  constexpr jobs::InternalErrorCause kFleet[] = {
      jobs::InternalErrorCause::kRedisError, jobs::InternalErrorCause::kRedisUnavailable,
      jobs::InternalErrorCause::kNotReplicated, jobs::InternalErrorCause::kBadReply};
  render_internal_errors(
      text, kFleet, [&](jobs::InternalErrorCause cause) { return handler.internal_errors(cause); });
  return text.take() + render_process_and_build();
}

}  // namespace wheel::jobs_app
