// SPDX-License-Identifier: Apache-2.0
// Internal to wheel-jobs: the Prometheus text of /metrics, for a node with its jobs in memory or
// a log (render_metrics) and for a node of a fleet with its jobs in Redis (render_redis_metrics,
// redis_metrics.cc). Both write the same families, from the same pieces below, where the numbers
// exist in both: jobs per state, commands, changes by kind, delivery lateness. Names and units:
// docs/wheel-jobs.md and docs/jobs-fleet.md.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "wheel/jobs/fleet/redis_jobs_handler.h"
#include "wheel/jobs/fleet/redis_store.h"
#include "wheel/jobs/log/job_log.h"
#include "wheel/jobs/model/job_queue.h"
#include "wheel/jobs/model/queue_metrics.h"
#include "wheel/jobs/server/beanstalk_dispatcher.h"
#include "wheel/jobs/server/internal_errors.h"
#include "wheel/net/tcp_server_counters.h"
#include "wheel/redis/redis_client.h"
#include "wheel/redis/redis_sentinel.h"
#include "wheel/server/prometheus_text.h"

namespace wheel::jobs_app {

// The jobs by state, put in total, timed out, and the tubes, from `counts`: a QueueCounters or a
// StoreTotals (the same numbers kept in memory or in Redis).
inline void render_job_counts(server::PrometheusText& text, const jobs::JobCounts& counts) {
  text.series("wheel_jobs_jobs", "gauge", "Jobs held, by state.", "state",
              {{"ready", counts.ready},
               {"delayed", counts.delayed},
               {"reserved", counts.reserved},
               {"buried", counts.buried}});
  text.counter("wheel_jobs_puts_total", "Jobs put (with --store: by the whole fleet, ever).",
               counts.total_jobs);
  text.counter("wheel_jobs_job_timeouts_total", "Reservations whose TTR ran out.",
               counts.job_timeouts);
  text.gauge("wheel_jobs_tubes", "Tubes that exist.", counts.tubes);
}

// The client connections' traffic: bytes read and written, and the writes (send calls) that
// carried them out (the replies to one read, or to one read from Redis, go in one write).
inline void render_client_io(server::PrometheusText& text, const net::TcpServerCounters& c) {
  text.series("wheel_jobs_client_bytes_total", "counter",
              "Bytes read from and written to client connections.", "direction",
              {{"in", c.bytes_in}, {"out", c.bytes_out}});
  text.counter("wheel_jobs_client_writes_total",
               "Writes (send calls) to client connections; bytes out / writes is the average.",
               c.writes);
  text.gauge("wheel_jobs_client_output_peak_bytes",
             "The most output one client connection had waiting for the kernel at once.",
             c.max_queued_output);
}

// Commands received, by command.
void render_commands(server::PrometheusText& text, const jobs::beanstalk::CommandCounts& c);

// Job changes by kind (only `kinds`: those the node counts) and the delivery lateness histogram.
void render_changes(server::PrometheusText& text, const jobs::QueueMetrics& m,
                    std::span<const jobs::ChangeCounter> kinds);

// Requests answered INTERNAL_ERROR by cause: `causes` (those the backend has), each counted by
// `count`.
template <class Count>
void render_internal_errors(server::PrometheusText& text,
                            std::span<const jobs::InternalErrorCause> causes, Count count) {
  constexpr std::string_view kName = "wheel_jobs_internal_errors_total";
  text.family(kName, "counter",
              "Requests answered INTERNAL_ERROR, by cause (each is logged with its reason, at "
              "most one line per cause every 10 s).");
  for (const jobs::InternalErrorCause cause : causes) {
    text.sample(kName, {{"cause", jobs::kInternalErrorCauseNames[static_cast<std::size_t>(cause)]}},
                count(cause));
  }
}

// The program's own series, as wheel-server serves them (server/process_metrics.h):
// wheel_build_info and the process_* families of this process, read from /proc now. Safe from
// any thread.
std::string render_process_and_build();

// Loop thread only: /metrics of a node with its jobs in memory (or in `log`, may be null): jobs
// per state (and per tube for the `tube_series` tubes holding the most jobs), commands, clients,
// changes by kind, lateness histograms; with a log its live and dead bytes and group commits.
std::string render_metrics(const jobs::BeanstalkDispatcher& dispatcher, const jobs::JobQueue& queue,
                           const jobs::JobLog* log, std::size_t tube_series,
                           const net::TcpServerCounters& io);

// Loop thread only: /metrics of a fleet node: the fleet's job counts from Redis (`totals`; null
// when Redis could not be read: those families are left out and wheel_jobs_redis_counts_read
// is 0), this node's commands, clients, changes and delivery lateness, and its Redis clients'
// round trips, reconnects and failures.
// With `sentinel` (redis-sentinel://, else null), its questions and announcements too.
std::string render_redis_metrics(const jobs::RedisJobsHandler& handler,
                                 const jobs::StoreTotals* totals, const jobs::RedisClient& commands,
                                 const jobs::RedisClient& events,
                                 const jobs::RedisSentinel* sentinel,
                                 const net::TcpServerCounters& io);

}  // namespace wheel::jobs_app
