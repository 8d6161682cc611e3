// SPDX-License-Identifier: Apache-2.0
#include "jobs_metrics.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "wheel/jobs/log/log_metrics.h"
#include "wheel/jobs/model/queue_metrics.h"
#include "wheel/server/process_metrics.h"
#include "wheel/server/prometheus_text.h"

namespace wheel::jobs_app {

namespace {

// The lateness histograms of the queue's own timers, and jobs per state of the busiest tubes.
void render_queue(server::PrometheusText& text, const jobs::JobQueue& queue,
                  std::size_t tube_series) {
  const jobs::QueueMetrics& m = queue.metrics();
  text.histogram("wheel_jobs_delay_lateness_seconds",
                 "Delay ends: made-ready-at minus due-at (the timing wheel's part).",
                 jobs::kLatenessBounds, m.delay_lateness.read());
  text.histogram("wheel_jobs_ready_wait_seconds",
                 "Reserves of ready jobs: reserved-at minus became-ready-at.",
                 jobs::kLatenessBounds, m.ready_wait.read());

  // Per tube, bounded: 10,000 tubes must not make 40,000 series per scrape.
  const std::vector<const jobs::Tube*> tubes = queue.tubes_by_jobs(tube_series);
  if (!tubes.empty()) {
    text.family("wheel_jobs_tube_jobs", "gauge",
                "Jobs by state in the tubes holding the most jobs (at most --metrics-tubes).");
  }
  for (const jobs::Tube* tube : tubes) {
    const std::pair<const char*, std::uint64_t> states[] = {{"ready", tube->ready.size()},
                                                            {"delayed", tube->delayed.size()},
                                                            {"reserved", tube->reserved},
                                                            {"buried", tube->buried.size()}};
    for (const auto& [state, count] : states) {
      text.sample("wheel_jobs_tube_jobs", {{"tube", tube->name()}, {"state", state}}, count);
    }
  }
  text.gauge("wheel_jobs_tubes_unlisted", "Tubes left out of wheel_jobs_tube_jobs by the cap.",
             queue.counters().tubes - tubes.size());
}

// The durable log: live and dead bytes, compaction, and the group commit's histograms.
void render_log(server::PrometheusText& text, const jobs::JobLog& log) {
  const jobs::JobLogStats s = log.stats();
  text.series("wheel_jobs_log_bytes", "gauge",
              "Bytes of the job log's segment files: live (the live jobs' records) and dead "
              "(what compaction can give back).",
              "state", {{"live", s.live_bytes}, {"dead", s.dead_bytes}});
  text.gauge("wheel_jobs_log_segments", "Segment files of the job log.", s.segments);
  text.counter("wheel_jobs_log_compacted_segments_total", "Segments removed by compaction.",
               s.compacted_segments);
  text.counter("wheel_jobs_log_rewritten_bytes_total",
               "Bytes of live records compaction copied forward.", s.rewritten_bytes);
  text.gauge("wheel_jobs_log_disk_full", "1 while the disk is full and changes are refused.",
             s.disk_full ? 1 : 0);
  // A stuck disk (a frozen file system, a hung device) shows here while the server answers.
  text.gauge_double(
      "wheel_jobs_log_oldest_unwritten_seconds",
      "Age of the oldest change handed to the log thread and not yet written (0: none).",
      s.oldest_unwritten_seconds);
  text.gauge_double(
      "wheel_jobs_log_oldest_unsynced_seconds",
      "Age of the oldest change not yet synced (0: none; always 0 with --fsync never).",
      s.oldest_unsynced_seconds);
  text.gauge("wheel_jobs_log_backlog_bytes",
             "Bytes handed to the log thread and not yet written (changes wait past 4 MiB).",
             s.backlog_bytes);
  const jobs::LogSyncMetrics m = log.sync_metrics();
  text.histogram("wheel_jobs_log_sync_seconds", "Time of one group commit's fdatasyncs.",
                 jobs::kSyncSecondsBounds, m.seconds);
  text.histogram("wheel_jobs_log_sync_batch_records", "Changes made durable by one group commit.",
                 jobs::kSyncBatchRecordsBounds, m.records, 1);
  text.histogram("wheel_jobs_log_sync_batch_bytes", "Bytes made durable by one group commit.",
                 jobs::kSyncBatchBytesBounds, m.bytes, 1);
}

}  // namespace

void render_commands(server::PrometheusText& text, const jobs::beanstalk::CommandCounts& c) {
  // The commands worth a series of their own (`stats` shows every count).
  constexpr std::string_view kShown[] = {"put",    "reserve",   "reserve-with-timeout",
                                         "delete", "release",   "bury",
                                         "kick",   "touch",     "peek",
                                         "stats",  "use",       "watch",
                                         "ignore", "pause-tube"};
  constexpr std::string_view kName = "wheel_jobs_commands_total";
  text.family(kName, "counter", "Commands received, by command.");
  for (const std::string_view command : kShown)
    text.sample(kName, {{"command", command}}, c[command]);
}

void render_changes(server::PrometheusText& text, const jobs::QueueMetrics& m,
                    std::span<const jobs::ChangeCounter> kinds) {
  text.family("wheel_jobs_changes_total", "counter",
              "Job changes since start, by kind (rate() gives changes per second).");
  for (const jobs::ChangeCounter kind : kinds) {
    text.sample("wheel_jobs_changes_total", {{"kind", jobs::change_counter_name(kind)}},
                m.change_count(kind));
  }
  text.histogram("wheel_jobs_delivery_lateness_seconds",
                 "Delayed jobs reserved after their delay ended: reserved-at minus due-at.",
                 jobs::kLatenessBounds, m.delivery_lateness.read());
}

std::string render_metrics(const jobs::BeanstalkDispatcher& dispatcher, const jobs::JobQueue& queue,
                           const jobs::JobLog* log, std::size_t tube_series,
                           const net::TcpServerCounters& io) {
  jobs::QueueCounters q = queue.counters();
  server::PrometheusText text;
  render_job_counts(text, q);
  text.gauge("wheel_jobs_body_bytes", "Bytes of job bodies held.", q.body_bytes);
  render_commands(text, dispatcher.commands());
  text.gauge("wheel_jobs_connections", "Client connections open.", q.sessions);
  text.gauge("wheel_jobs_waiting", "Clients blocked in a reserve.", q.waiting);
  render_client_io(text, io);
  std::array<jobs::ChangeCounter, jobs::kChangeCounters> every{};
  for (std::size_t i = 0; i < every.size(); ++i) every[i] = static_cast<jobs::ChangeCounter>(i);
  render_changes(text, queue.metrics(), every);
  render_queue(text, queue, tube_series);
  if (log != nullptr) render_log(text, *log);
  constexpr jobs::InternalErrorCause kLocal[] = {jobs::InternalErrorCause::kLogFailed,
                                                 jobs::InternalErrorCause::kBodyUnreadable};
  render_internal_errors(text, kLocal, [&](jobs::InternalErrorCause cause) {
    return dispatcher.internal_errors(cause);
  });
  return text.take() + render_process_and_build();
}

std::string render_process_and_build() {
  return server::render_build_info() +
         server::render_process_metrics(
             server::read_process_sample(0).value_or(server::ProcessSample{}));
}

}  // namespace wheel::jobs_app
