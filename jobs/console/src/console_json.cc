// SPDX-License-Identifier: Apache-2.0
#include "console_json.h"

namespace wheel::jobs::console {

nlohmann::json tube_json(const ConsoleTube& t) {
  nlohmann::json j = {{"name", t.name},         {"ready", t.ready},
                      {"delayed", t.delayed},   {"reserved", t.reserved},
                      {"buried", t.buried},     {"urgent", t.urgent},
                      {"paused", t.paused},     {"pause_left_ms", t.pause_left_ms},
                      {"puts", t.puts},         {"using", t.using_count},
                      {"watching", t.watching}, {"waiting", t.waiting}};
  j["deliveries"] = t.deliveries ? nlohmann::json(*t.deliveries) : nlohmann::json();
  j["head_wait_ms"] = t.head_wait_ms ? nlohmann::json(*t.head_wait_ms) : nlohmann::json();
  j["oldest_ready_ms"] = t.oldest_ready_ms ? nlohmann::json(*t.oldest_ready_ms) : nlohmann::json();
  return j;
}

nlohmann::json job_json(const ConsoleJob& job) {
  nlohmann::json j = {{"id", job.id},
                      {"tube", job.tube},
                      {"state", std::string(job_state_name(job.state))},
                      {"priority", job.priority},
                      {"time_left_ms", job.time_left_ms},
                      {"body_size", job.body_size},
                      {"body", job.body},
                      {"body_complete", job.body.size() == job.body_size}};
  if (job.stats_known) {
    j["age_ms"] = job.age_ms;
    j["delay_ms"] = job.delay_ms;
    j["ttr_ms"] = job.ttr_ms;
    j["reserves"] = job.reserves;
    j["timeouts"] = job.timeouts;
    j["releases"] = job.releases;
    j["buries"] = job.buries;
    j["kicks"] = job.kicks;
  }
  return j;
}

nlohmann::json histogram_json(const ConsoleHistogram& h) {
  return {{"bounds_seconds", h.bounds},
          {"counts", h.counts},
          {"count", h.count},
          {"sum_seconds", h.sum}};
}

nlohmann::json point_json(const LatenessPoint& p) {
  // null: no delivery in that second, or past the last bound.
  const auto seconds = [&p](double v) {
    return p.count == 0 || v < 0 ? nlohmann::json() : nlohmann::json(v);
  };
  return {{"at_ms", p.at_ms},
          {"count", p.count},
          {"p50", seconds(p.p50)},
          {"p90", seconds(p.p90)},
          {"p99", seconds(p.p99)}};
}

int http_status(ConsoleStatus status) {
  switch (status) {
    case ConsoleStatus::kOk:
      return 200;
    case ConsoleStatus::kNotFound:
      return 404;
    case ConsoleStatus::kFull:
      return 507;
    case ConsoleStatus::kUnavailable:
      return 503;
    default:
      return 500;
  }
}

server::HttpResponse json_response(const nlohmann::json& body, int status) {
  server::HttpResponse r;
  r.status = status;
  r.content_type = "application/json; charset=utf-8";
  r.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  r.body.push_back('\n');
  r.extra_headers = "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n";
  return r;
}

server::HttpResponse error_response(int status, std::string_view message) {
  return json_response({{"error", std::string(message)}}, status);
}

}  // namespace wheel::jobs::console
