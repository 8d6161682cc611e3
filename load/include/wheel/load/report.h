// SPDX-License-Identifier: Apache-2.0
// wheel-load's report: the merged result summarized (percentiles), judged against the
// expectations of the run, as JSON (--json) and as a human-readable summary.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "wheel/load/load_config.h"
#include "wheel/load/load_result.h"

namespace wheel::load {

// "none", "active" or "all": the --answer-heartbeats value.
const char* to_string(LoadConfig::Heartbeats h);

// The expectations `result` broke, one sentence each; empty when the run is ok. A run that ended
// early (a signal, no connection possible, the server's shutdown) fails, and says so first.
// Expectations:
// every requested connection established; every active connection survived to the end and got
// its PONGs (at most one PING per connection may be in flight at the end); with
// --expect-idle-close > 0, every idle connection closed by the server on time (neither early,
// late, nor never), and with 0, none closed at all.
std::vector<std::string> failed_expectations(const LoadResult& result, const LoadConfig& config);

// The report as JSON. Keys: connections_requested, connections_established, connect_errors,
// connect_errors_by_kind, active {count, survived, closed_early, closed_by_shutdown}, idle {count,
// closed_on_time, closed_early, closed_late, never_closed, not_yet_due, closed_by_shutdown,
// lateness_ms {p50, p90, p99, max, min}}, rtt_ms {p50, p90, p99, max, min}, connect_ms {...},
// pings_sent, pongs_received, duration_s, ok, failures, peak_open, bye_idle_received, heartbeats
// {received, answered}, interrupted {signal, after_s} or null, gave_up (a sentence) or null,
// server_shutdown {at_s, active_closed, idle_closed} or null, unexpected_lines, io_errors,
// max_loop_stall_ms, delay {...}, garbage {...}, slow_readers {...}, churn {...}, settings {...}.
// Percentiles without samples are null.
nlohmann::json make_report(const LoadResult& result, const LoadConfig& config);

// A few lines for a human, ending in "result: OK" or "result: FAILED" and the reasons.
std::string format_summary(const nlohmann::json& report);

}  // namespace wheel::load
