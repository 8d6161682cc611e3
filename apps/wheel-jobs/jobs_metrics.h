// SPDX-License-Identifier: Apache-2.0
// Internal to wheel-jobs: the Prometheus text of /metrics (jobs per state, commands, clients).
#pragma once

#include <string>

#include "wheel/jobs/beanstalk_dispatcher.h"
#include "wheel/jobs/job_queue.h"

namespace wheel::jobs_app {

// Loop thread only.
std::string render_metrics(const jobs::BeanstalkDispatcher& dispatcher,
                           const jobs::JobQueue& queue);

}  // namespace wheel::jobs_app
