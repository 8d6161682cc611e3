// SPDX-License-Identifier: Apache-2.0
// Internal to wheel-jobs: the Prometheus text of /metrics: jobs per state (and per tube for the
// `tube_series` tubes holding the most jobs), commands, clients, changes by kind, delivery
// lateness; with a durable `log` (may be null) its live and dead bytes and group-commit
// histograms. Names and units: docs/wheel-jobs.md.
#pragma once

#include <cstddef>
#include <string>

#include "wheel/jobs/beanstalk_dispatcher.h"
#include "wheel/jobs/job_log.h"
#include "wheel/jobs/job_queue.h"

namespace wheel::jobs_app {

// Loop thread only.
std::string render_metrics(const jobs::BeanstalkDispatcher& dispatcher, const jobs::JobQueue& queue,
                           const jobs::JobLog* log, std::size_t tube_series);

}  // namespace wheel::jobs_app
