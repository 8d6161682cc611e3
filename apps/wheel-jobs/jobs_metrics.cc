// SPDX-License-Identifier: Apache-2.0
#include "jobs_metrics.h"

#include "wheel/server/prometheus_text.h"

namespace wheel::jobs_app {

std::string render_metrics(const jobs::BeanstalkDispatcher& dispatcher,
                           const jobs::JobQueue& queue) {
  jobs::QueueCounters q = queue.counters();
  const jobs::beanstalk::CommandCounts& c = dispatcher.commands();
  server::PrometheusText text;
  text.family("wheel_jobs_jobs", "gauge", "Jobs held, by state.");
  text.sample("wheel_jobs_jobs", {{"state", "ready"}}, q.ready);
  text.sample("wheel_jobs_jobs", {{"state", "delayed"}}, q.delayed);
  text.sample("wheel_jobs_jobs", {{"state", "reserved"}}, q.reserved);
  text.sample("wheel_jobs_jobs", {{"state", "buried"}}, q.buried);
  text.family("wheel_jobs_body_bytes", "gauge", "Bytes of job bodies held.");
  text.sample("wheel_jobs_body_bytes", {}, q.body_bytes);
  text.family("wheel_jobs_puts_total", "counter", "Jobs put since start.");
  text.sample("wheel_jobs_puts_total", {}, q.total_jobs);
  text.family("wheel_jobs_job_timeouts_total", "counter", "Reservations whose TTR ran out.");
  text.sample("wheel_jobs_job_timeouts_total", {}, q.job_timeouts);
  text.family("wheel_jobs_commands_total", "counter", "Commands received, by command.");
  const std::pair<const char*, std::uint64_t> commands[] = {
      {"put", c.put},
      {"reserve", c.reserve},
      {"reserve-with-timeout", c.reserve_with_timeout},
      {"delete", c.delete_},
      {"release", c.release},
      {"bury", c.bury},
      {"kick", c.kick},
      {"touch", c.touch},
      {"peek", c.peek},
      {"stats", c.stats},
      {"use", c.use},
      {"watch", c.watch},
      {"ignore", c.ignore},
      {"pause-tube", c.pause_tube}};
  for (const auto& [name, count] : commands) {
    text.sample("wheel_jobs_commands_total", {{"command", name}}, count);
  }
  text.family("wheel_jobs_tubes", "gauge", "Tubes that exist.");
  text.sample("wheel_jobs_tubes", {}, q.tubes);
  text.family("wheel_jobs_connections", "gauge", "Client connections open.");
  text.sample("wheel_jobs_connections", {}, q.sessions);
  text.family("wheel_jobs_waiting", "gauge", "Clients blocked in a reserve.");
  text.sample("wheel_jobs_waiting", {}, q.waiting);
  return text.take();
}

}  // namespace wheel::jobs_app
