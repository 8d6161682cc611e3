// SPDX-License-Identifier: Apache-2.0
#include "wheel/server/server_stats.h"

#include <nlohmann/json.hpp>

namespace wheel::server {
namespace {

// The one list of the counters, in the order STATS and the log line print them.
template <class Visit>
void for_each_counter(const ServerStats& s, Visit&& visit) {
  visit("worker", static_cast<std::int64_t>(s.worker));
  visit("pid", s.pid);
  visit("connections", s.connections);
  visit("accepted", s.accepted);
  visit("rejected_full", s.rejected_full);
  visit("rejected_emfile", s.rejected_emfile);
  visit("accept_errors", s.accept_errors);
  visit("idle_closed", s.idle_closed);
  visit("pings", s.pings);
  visit("heartbeats", s.heartbeats);
  visit("delayed_pending", s.delayed_pending);
  visit("delayed_sent", s.delayed_sent);
  visit("delayed_bytes", s.delayed_bytes);
  visit("delayed_refused", s.delayed_refused);
  visit("errors", s.errors);
  visit("slow_consumers", s.slow_consumers);
  visit("closing", s.closing);
  visit("close_grace_expired", s.close_grace_expired);
  visit("stale_timeouts", s.stale_timeouts);
  visit("bytes_in", s.bytes_in);
  visit("bytes_out", s.bytes_out);
}

}  // namespace

std::string ServerStats::to_json() const {
  nlohmann::json j = nlohmann::json::object();  // keys sorted, as STATS always printed them
  for_each_counter(*this, [&j](const char* key, auto value) { j[key] = value; });
  return j.dump();
}

std::string ServerStats::to_log_string() const {
  std::string out;
  for_each_counter(*this, [&out](const char* key, auto value) {
    if (!out.empty()) out += ' ';
    out.append(key).append("=").append(std::to_string(value));
  });
  return out;
}

}  // namespace wheel::server
