// SPDX-License-Identifier: Apache-2.0
#include "wheel/load/load_result.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace wheel::load {

void merge(LoadResult& into, const LoadResult& other) {
  into.connections_requested += other.connections_requested;
  into.connections_established += other.connections_established;
  into.connect_errors += other.connect_errors;
  for (const auto& [kind, n] : other.connect_errors_by_kind) into.connect_errors_by_kind[kind] += n;
  into.active_count += other.active_count;
  into.active_survived += other.active_survived;
  into.active_closed_early += other.active_closed_early;
  into.active_closed_by_shutdown += other.active_closed_by_shutdown;
  into.idle_closed_by_shutdown += other.idle_closed_by_shutdown;
  into.heartbeats_received += other.heartbeats_received;
  into.heartbeats_answered += other.heartbeats_answered;
  if (other.server_shutdown_at_s >= 0 &&
      (into.server_shutdown_at_s < 0 || other.server_shutdown_at_s < into.server_shutdown_at_s)) {
    into.server_shutdown_at_s = other.server_shutdown_at_s;
  }
  if (into.interrupted_by == 0) into.interrupted_by = other.interrupted_by;
  if (into.gave_up.empty()) into.gave_up = other.gave_up;
  into.idle_count += other.idle_count;
  into.idle_closed_on_time += other.idle_closed_on_time;
  into.idle_closed_early += other.idle_closed_early;
  into.idle_closed_late += other.idle_closed_late;
  into.idle_never_closed += other.idle_never_closed;
  into.idle_not_yet_due += other.idle_not_yet_due;
  into.pings_sent += other.pings_sent;
  into.pongs_received += other.pongs_received;
  into.unexpected_lines += other.unexpected_lines;
  into.bye_idle_received += other.bye_idle_received;
  into.io_errors += other.io_errors;
  into.delays_sent += other.delays_sent;
  into.delays_acknowledged += other.delays_acknowledged;
  into.delayed_on_time += other.delayed_on_time;
  into.delayed_early += other.delayed_early;
  into.delayed_late += other.delayed_late;
  into.delayed_missing += other.delayed_missing;
  into.delayed_not_yet_due += other.delayed_not_yet_due;
  into.garbage_sent += other.garbage_sent;
  into.garbage_rejected += other.garbage_rejected;
  into.slow_pings_sent += other.slow_pings_sent;
  into.slow_pongs_received += other.slow_pongs_received;
  into.churn_started += other.churn_started;
  into.churn_established += other.churn_established;
  into.churn_completed += other.churn_completed;
  into.churn_failed += other.churn_failed;
  into.churn_interrupted += other.churn_interrupted;
  into.delayed_lateness_ms.insert(into.delayed_lateness_ms.end(), other.delayed_lateness_ms.begin(),
                                  other.delayed_lateness_ms.end());
  into.peak_open = std::max(into.peak_open, other.peak_open);
  into.idle_lateness_ms.insert(into.idle_lateness_ms.end(), other.idle_lateness_ms.begin(),
                               other.idle_lateness_ms.end());
  into.rtt_ms.insert(into.rtt_ms.end(), other.rtt_ms.begin(), other.rtt_ms.end());
  into.connect_ms.insert(into.connect_ms.end(), other.connect_ms.begin(), other.connect_ms.end());
  into.duration_s = std::max(into.duration_s, other.duration_s);
  into.max_loop_stall_ms = std::max(into.max_loop_stall_ms, other.max_loop_stall_ms);
}

// Every field, by name: a child's result must arrive whole at its parent.
void to_json(nlohmann::json& j, const LoadResult& r) {
  j = nlohmann::json::object();
  j["connections_requested"] = r.connections_requested;
  j["connections_established"] = r.connections_established;
  j["connect_errors"] = r.connect_errors;
  j["connect_errors_by_kind"] = r.connect_errors_by_kind;
  j["active_count"] = r.active_count;
  j["active_survived"] = r.active_survived;
  j["active_closed_early"] = r.active_closed_early;
  j["idle_count"] = r.idle_count;
  j["idle_closed_on_time"] = r.idle_closed_on_time;
  j["idle_closed_early"] = r.idle_closed_early;
  j["idle_closed_late"] = r.idle_closed_late;
  j["idle_never_closed"] = r.idle_never_closed;
  j["idle_not_yet_due"] = r.idle_not_yet_due;
  j["pings_sent"] = r.pings_sent;
  j["pongs_received"] = r.pongs_received;
  j["unexpected_lines"] = r.unexpected_lines;
  j["bye_idle_received"] = r.bye_idle_received;
  j["io_errors"] = r.io_errors;
  j["peak_open"] = r.peak_open;
  j["idle_lateness_ms"] = r.idle_lateness_ms;
  j["rtt_ms"] = r.rtt_ms;
  j["connect_ms"] = r.connect_ms;
  j["delays_sent"] = r.delays_sent;
  j["delays_acknowledged"] = r.delays_acknowledged;
  j["delayed_on_time"] = r.delayed_on_time;
  j["delayed_early"] = r.delayed_early;
  j["delayed_late"] = r.delayed_late;
  j["delayed_missing"] = r.delayed_missing;
  j["delayed_not_yet_due"] = r.delayed_not_yet_due;
  j["garbage_sent"] = r.garbage_sent;
  j["garbage_rejected"] = r.garbage_rejected;
  j["slow_pings_sent"] = r.slow_pings_sent;
  j["slow_pongs_received"] = r.slow_pongs_received;
  j["churn_started"] = r.churn_started;
  j["churn_established"] = r.churn_established;
  j["churn_completed"] = r.churn_completed;
  j["churn_failed"] = r.churn_failed;
  j["churn_interrupted"] = r.churn_interrupted;
  j["delayed_lateness_ms"] = r.delayed_lateness_ms;
  j["duration_s"] = r.duration_s;
  j["max_loop_stall_ms"] = r.max_loop_stall_ms;
  j["processes"] = r.processes;
  j["active_closed_by_shutdown"] = r.active_closed_by_shutdown;
  j["idle_closed_by_shutdown"] = r.idle_closed_by_shutdown;
  j["heartbeats_received"] = r.heartbeats_received;
  j["heartbeats_answered"] = r.heartbeats_answered;
  j["server_shutdown_at_s"] = r.server_shutdown_at_s;
  j["interrupted_by"] = r.interrupted_by;
  j["gave_up"] = r.gave_up;
}

void from_json(const nlohmann::json& j, LoadResult& r) {
  j.at("connections_requested").get_to(r.connections_requested);
  j.at("connections_established").get_to(r.connections_established);
  j.at("connect_errors").get_to(r.connect_errors);
  j.at("connect_errors_by_kind").get_to(r.connect_errors_by_kind);
  j.at("active_count").get_to(r.active_count);
  j.at("active_survived").get_to(r.active_survived);
  j.at("active_closed_early").get_to(r.active_closed_early);
  j.at("idle_count").get_to(r.idle_count);
  j.at("idle_closed_on_time").get_to(r.idle_closed_on_time);
  j.at("idle_closed_early").get_to(r.idle_closed_early);
  j.at("idle_closed_late").get_to(r.idle_closed_late);
  j.at("idle_never_closed").get_to(r.idle_never_closed);
  j.at("idle_not_yet_due").get_to(r.idle_not_yet_due);
  j.at("pings_sent").get_to(r.pings_sent);
  j.at("pongs_received").get_to(r.pongs_received);
  j.at("unexpected_lines").get_to(r.unexpected_lines);
  j.at("bye_idle_received").get_to(r.bye_idle_received);
  j.at("io_errors").get_to(r.io_errors);
  j.at("peak_open").get_to(r.peak_open);
  j.at("idle_lateness_ms").get_to(r.idle_lateness_ms);
  j.at("rtt_ms").get_to(r.rtt_ms);
  j.at("connect_ms").get_to(r.connect_ms);
  j.at("delays_sent").get_to(r.delays_sent);
  j.at("delays_acknowledged").get_to(r.delays_acknowledged);
  j.at("delayed_on_time").get_to(r.delayed_on_time);
  j.at("delayed_early").get_to(r.delayed_early);
  j.at("delayed_late").get_to(r.delayed_late);
  j.at("delayed_missing").get_to(r.delayed_missing);
  j.at("delayed_not_yet_due").get_to(r.delayed_not_yet_due);
  j.at("garbage_sent").get_to(r.garbage_sent);
  j.at("garbage_rejected").get_to(r.garbage_rejected);
  j.at("slow_pings_sent").get_to(r.slow_pings_sent);
  j.at("slow_pongs_received").get_to(r.slow_pongs_received);
  j.at("churn_started").get_to(r.churn_started);
  j.at("churn_established").get_to(r.churn_established);
  j.at("churn_completed").get_to(r.churn_completed);
  j.at("churn_failed").get_to(r.churn_failed);
  j.at("churn_interrupted").get_to(r.churn_interrupted);
  j.at("delayed_lateness_ms").get_to(r.delayed_lateness_ms);
  j.at("duration_s").get_to(r.duration_s);
  j.at("max_loop_stall_ms").get_to(r.max_loop_stall_ms);
  j.at("processes").get_to(r.processes);
  j.at("active_closed_by_shutdown").get_to(r.active_closed_by_shutdown);
  j.at("idle_closed_by_shutdown").get_to(r.idle_closed_by_shutdown);
  j.at("heartbeats_received").get_to(r.heartbeats_received);
  j.at("heartbeats_answered").get_to(r.heartbeats_answered);
  j.at("server_shutdown_at_s").get_to(r.server_shutdown_at_s);
  j.at("interrupted_by").get_to(r.interrupted_by);
  j.at("gave_up").get_to(r.gave_up);
}

}  // namespace wheel::load
