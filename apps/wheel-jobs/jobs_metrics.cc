// SPDX-License-Identifier: Apache-2.0
#include "jobs_metrics.h"

#include "wheel/server/prometheus_text.h"

namespace wheel::jobs_app {

std::string render_metrics(const jobs::BeanstalkDispatcher& dispatcher,
                           const jobs::JobQueue& queue) {
  jobs::QueueCounters q = queue.counters();
  const jobs::beanstalk::CommandCounts& c = dispatcher.commands();
  server::PrometheusText text;
  text.series(
      "wheel_jobs_jobs", "gauge", "Jobs held, by state.", "state",
      {{"ready", q.ready}, {"delayed", q.delayed}, {"reserved", q.reserved}, {"buried", q.buried}});
  text.gauge("wheel_jobs_body_bytes", "Bytes of job bodies held.", q.body_bytes);
  text.counter("wheel_jobs_puts_total", "Jobs put since start.", q.total_jobs);
  text.counter("wheel_jobs_job_timeouts_total", "Reservations whose TTR ran out.", q.job_timeouts);
  text.series("wheel_jobs_commands_total", "counter", "Commands received, by command.", "command",
              {{"put", c.put},
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
               {"pause-tube", c.pause_tube}});
  text.gauge("wheel_jobs_tubes", "Tubes that exist.", q.tubes);
  text.gauge("wheel_jobs_connections", "Client connections open.", q.sessions);
  text.gauge("wheel_jobs_waiting", "Clients blocked in a reserve.", q.waiting);
  return text.take();
}

}  // namespace wheel::jobs_app
