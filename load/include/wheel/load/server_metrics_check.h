// SPDX-License-Identifier: Apache-2.0
// wheel-load --metrics-url: the server's own view of a run, from its Prometheus endpoint
// (wheel-server --metrics-port), set beside wheel-load's.
//
// The server's counters run since it started, so wheel-load scrapes once before the first
// connection (the baseline) and again after the run, and compares the differences: what the
// server counted during the run. What "agree" means depends on who else used the server:
//   - exclusive (--metrics-exclusive: wheel-load was the server's only client during the run):
//     accepted connections and idle closes ("BYE idle" received) must be equal, the server's
//     open connections back to the baseline; PONGs and DELAYED lines may have been sent by the
//     server and not read by wheel-load before it closed, so the server's counts must lie
//     between what wheel-load received and what it asked for;
//   - shared (the default): other clients add to every server count, so each must be at least
//     wheel-load's (a server count below wheel-load's is wrong whoever else connected).
// The scrape after the run is retried (every 100 ms, up to a few seconds) until the rows
// agree: the server may still be processing the last closes when wheel-load ends.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "wheel/load/load_result.h"

namespace wheel::load {

struct MetricsUrl {
  std::string host;  // a name, an IPv4 address, or an IPv6 address without brackets
  std::uint16_t port = 80;
  std::string path = "/metrics";
};

// Parses "http://HOST[:PORT][/PATH]" (IPv6 as [::1]). Throws std::invalid_argument naming
// what is wrong (another scheme, a bad port, an empty host).
MetricsUrl parse_metrics_url(std::string_view url);

// The samples of an exposition text: "name" or "name{labels as written}" -> value. Comment
// lines and lines without a value are skipped.
using MetricSamples = std::map<std::string, double>;
MetricSamples parse_samples(std::string_view text);

// GET url with a blocking socket; returns the parsed samples. Throws std::runtime_error for a
// failed connection, a status other than 200 or a timeout. Safe from any thread.
MetricSamples scrape(const MetricsUrl& url, std::chrono::milliseconds timeout);

// The comparison table (see the file comment): {"url", "exclusive", "agree", "rows": [{"what",
// "wheel_load", "server", "rule", "agree"}]}. `before` and `after` are the two scrapes.
nlohmann::json compare_with_server(const LoadResult& result, const MetricSamples& before,
                                   const MetricSamples& after, bool exclusive);

// The table as text lines for the summary.
std::string format_comparison(const nlohmann::json& comparison);

}  // namespace wheel::load
