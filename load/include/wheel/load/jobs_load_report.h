// SPDX-License-Identifier: Apache-2.0
// The figures of one job-server load run (jobs_load.h) as one JSON object: what
// `wheel-jobs-load run` prints and writes with --json.
#pragma once

#include <nlohmann/json.hpp>

#include "wheel/load/jobs_load.h"

namespace wheel::load {

// Keys: protocol, port, connections, window, body_size (the run's settings), sent,
// acknowledged, error_replies, elapsed_s, per_second, reply_ms {p50, p90, p99, max, min, count}
// (percentiles_json.h); a lateness run adds lateness_ms {...}, probes_put, probes_missing and
// others_reserved; first_error_reply and error only when not empty.
// Pure function, safe from any thread.
nlohmann::json jobs_load_json(const JobsLoadConfig& config, const JobsLoadResult& result);

}  // namespace wheel::load
