// SPDX-License-Identifier: Apache-2.0
#include "wheel/jobs/console/console_service.h"

#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <stdexcept>

#include "console_assets.h"
#include "console_guard.h"
#include "console_json.h"
#include "wheel/jobs/model/tube_name.h"

namespace wheel::jobs::console {
namespace {

using server::HttpRequest;
using server::HttpResponse;

// The path's segments, each percent-decoded ("/api/tubes/a%2Fb" -> api, tubes, a/b).
std::optional<std::vector<std::string>> segments(std::string_view raw) {
  std::vector<std::string> out;
  while (!raw.empty()) {
    if (raw.front() == '/') {
      raw.remove_prefix(1);
      continue;
    }
    const std::size_t slash = raw.find('/');
    auto part = server::percent_decode(raw.substr(0, slash), false);
    if (!part) return std::nullopt;
    out.push_back(std::move(*part));
    raw = slash == std::string_view::npos ? std::string_view() : raw.substr(slash);
  }
  return out;
}

// A whole number from `text` in [min, max]; nullopt otherwise.
std::optional<std::uint64_t> whole(std::string_view text, std::uint64_t min, std::uint64_t max) {
  if (text.empty() || text.size() > 20) return std::nullopt;
  std::uint64_t v = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    if (v > (UINT64_MAX - 9) / 10) return std::nullopt;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (v < min || v > max) return std::nullopt;
  return v;
}

// Query parameter `name` as a count in [1, max] (absent: `fallback`); an error text otherwise.
std::optional<std::size_t> count_param(const HttpRequest& r, std::string_view name,
                                       std::size_t fallback, std::size_t max, std::string* error) {
  const std::optional<std::string> text = r.param(name);
  if (!text) return std::min(fallback, max);
  if (auto v = whole(*text, 1, max)) return static_cast<std::size_t>(*v);
  *error = std::string(name) + " must be a whole number from 1 to " + std::to_string(max);
  return std::nullopt;
}

// Query parameter `name` as an offset in [0, max] (absent: 0); an error text otherwise.
std::optional<std::size_t> offset_param(const HttpRequest& r, std::string_view name,
                                        std::size_t max, std::string* error) {
  const std::optional<std::string> text = r.param(name);
  if (!text) return 0;
  if (auto v = whole(*text, 0, max)) return static_cast<std::size_t>(*v);
  *error = std::string(name) + " must be a whole number from 0 to " + std::to_string(max);
  return std::nullopt;
}

constexpr const char* kListNames[] = {"ready", "delayed", "buried"};

struct MoveArgs {
  std::string to;
  ConsoleList list = kReadyList;
  std::uint64_t count = 1;
};

// A move's arguments: to (another valid tube), state (ready, delayed, buried), count (1 to
// `max`, default 1).
std::optional<MoveArgs> move_args(const nlohmann::json& args, const std::string& from,
                                  std::size_t max, std::string* error) {
  MoveArgs m;
  const auto count = number_arg(args, "count", 1, 1, static_cast<double>(max), error);
  if (!count) return std::nullopt;
  m.count = static_cast<std::uint64_t>(*count);
  const auto to = args.find("to");
  if (to == args.end() || !to->is_string() || !is_valid_tube_name(to->get<std::string>()) ||
      to->get<std::string>() == from) {
    *error = "to: the name of another tube, to move the jobs into";
    return std::nullopt;
  }
  m.to = to->get<std::string>();
  const auto state = args.find("state");
  for (const std::size_t list : {kReadyList, kDelayedList, kBuriedList}) {
    if (state != args.end() && state->is_string() && *state == kListNames[list]) {
      m.list = static_cast<ConsoleList>(list);
      return m;
    }
  }
  *error = "state: ready, delayed or buried";
  return std::nullopt;
}

// The quantile `q` of the bucket counts `delta` (bounds in seconds; -1: past the last bound).
double quantile(const std::vector<double>& bounds, const std::vector<std::uint64_t>& delta,
                std::uint64_t n, double q) {
  if (n == 0) return 0;
  const double rank = q * static_cast<double>(n);
  double below = 0;
  for (std::size_t i = 0; i < delta.size(); ++i) {
    const double here = static_cast<double>(delta[i]);
    if (below + here >= rank && here > 0) {
      if (i >= bounds.size()) return -1;
      const double lower = i == 0 ? 0 : bounds[i - 1];
      return lower + (bounds[i] - lower) * ((rank - below) / here);
    }
    below += here;
  }
  return -1;
}

std::int64_t system_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

ConsoleService::ConsoleService(ConsoleBackend& backend, ConsoleOptions options)
    : backend_(backend), options_(std::move(options)) {
  if (options_.token.empty()) throw std::invalid_argument("console: the token must not be empty");
  if (options_.max_tubes == 0 || options_.max_jobs == 0 || options_.max_preview == 0 ||
      options_.max_scan == 0 || options_.max_move == 0 || options_.history == 0) {
    throw std::invalid_argument("console: every bound must be at least 1");
  }
  if (!options_.clock) options_.clock = system_ms;
}

void ConsoleService::handle(const HttpRequest& request, Respond respond) {
  if (!host_allowed(request, options_.allowed_hosts)) {
    return respond(error_response(421, "this console answers only to the Host it listens on"));
  }
  const auto parts = segments(request.raw_path);
  if (!parts) return respond(error_response(400, "bad percent escape in the path"));
  const bool read = request.method == "GET" || request.method == "HEAD";
  const std::string_view first = parts->empty() ? std::string_view() : (*parts)[0];
  if (first == "api") {
    if (options_.token_for_reads && !token_matches(request, options_.token)) {
      return respond(error_response(401, "this console needs its token (X-Wheel-Token)"));
    }
    if (read) return api_get(*parts, request, std::move(respond));
    if (request.method == "POST") return api_post(*parts, request, std::move(respond));
    HttpResponse r = error_response(405, "GET or POST");
    r.extra_headers += "Allow: GET, HEAD, POST\r\n";
    return respond(std::move(r));
  }
  const bool view = parts->empty() || (parts->size() == 2 && (first == "tubes" || first == "jobs"));
  const bool asset = parts->size() == 2 && first == "assets";
  if (!view && !asset) return respond(error_response(404, "no such page"));
  if (!read) {
    HttpResponse r = error_response(405, "GET only");
    r.extra_headers += "Allow: GET, HEAD\r\n";
    return respond(std::move(r));
  }
  if (asset) {
    std::optional<HttpResponse> r = asset_response((*parts)[1]);
    return respond(r ? std::move(*r) : error_response(404, "no such asset"));
  }
  respond(page_response(options_.token_for_reads ? std::string() : options_.token,
                        options_.token_for_reads, options_.read_only, backend_.kind()));
}

void ConsoleService::api_get(const std::vector<std::string>& parts, const HttpRequest& request,
                             Respond respond) {
  const std::size_t n = parts.size();
  std::string error;
  if (n == 2 && parts[1] == "overview") {
    std::weak_ptr<bool> alive = alive_;
    return backend_.overview(options_.max_tubes, [this, alive, respond](ConsoleOverview&& o) {
      if (alive.expired()) return;
      if (o.status != ConsoleStatus::kOk) {
        return respond(error_response(http_status(o.status), o.error));
      }
      HttpResponse r = json_response({});
      r.body = overview_json(o, options_.clock());
      respond(std::move(r));
    });
  }
  if (n == 2 && parts[1] == "lateness") {
    nlohmann::json points = nlohmann::json::array();
    for (const LatenessPoint& p : history_) points.push_back(point_json(p));
    return respond(json_response(
        {{"histogram", histogram_json(backend_.lateness())}, {"history", std::move(points)}}));
  }
  ConsoleLimits limits;
  const auto jobs = count_param(request, "jobs", limits.jobs, options_.max_jobs, &error);
  const auto preview =
      count_param(request, "preview", limits.preview, options_.max_preview, &error);
  if (!jobs || !preview) return respond(error_response(400, error));
  limits.jobs = *jobs;
  limits.preview = *preview;
  for (const std::size_t list : {kReadyList, kDelayedList, kBuriedList}) {
    const auto offset = offset_param(request, std::string(kListNames[list]) + "_offset",
                                     options_.max_offset, &error);
    if (!offset) return respond(error_response(400, error));
    limits.offset[list] = *offset;
  }
  const auto answer = [respond](auto&& view, nlohmann::json json) {
    if (view.status != ConsoleStatus::kOk) {
      return respond(error_response(http_status(view.status), view.error));
    }
    respond(json_response(json));
  };
  if (n == 3 && parts[1] == "tubes") {
    return backend_.tube(parts[2], limits, [answer, limits](ConsoleTubeView&& v) {
      nlohmann::json j = {{"tube", tube_json(v.tube)},
                          {"page_size", limits.jobs},
                          {"offsets",
                           {{"ready", limits.offset[kReadyList]},
                            {"delayed", limits.offset[kDelayedList]},
                            {"buried", limits.offset[kBuriedList]}}}};
      for (const auto& [name, list] :
           {std::pair{"ready", &v.ready}, std::pair{"delayed", &v.delayed},
            std::pair{"buried", &v.buried}}) {
        j[name] = nlohmann::json::array();
        for (const ConsoleJob& job : *list) j[name].push_back(job_json(job));
      }
      answer(v, std::move(j));
    });
  }
  if (n == 4 && parts[1] == "tubes" && parts[3] == "search") {
    const std::optional<std::string> q = request.param("q");
    if (!q || q->empty() || q->size() > 1024) {
      return respond(error_response(400, "q: the text to find, 1 to 1024 bytes"));
    }
    const auto scan = count_param(request, "scan", 1000, options_.max_scan, &error);
    if (!scan) return respond(error_response(400, error));
    return backend_.search(parts[2], *q, *scan, limits, [answer, scan](ConsoleSearch&& s) {
      nlohmann::json j = {{"scanned", s.scanned},
                          {"scan_bound", *scan},
                          {"complete", s.complete},
                          {"hits", nlohmann::json::array()}};
      for (const ConsoleJob& job : s.hits) j["hits"].push_back(job_json(job));
      answer(s, std::move(j));
    });
  }
  if (n == 3 && parts[1] == "jobs") {
    const auto id = whole(parts[2], 1, UINT64_MAX);
    if (!id) return respond(error_response(400, "a job id is a whole number from 1"));
    return backend_.job(*id, [answer](ConsoleJobView&& v) { answer(v, job_json(v.job)); });
  }
  respond(error_response(404, "no such API call (docs/console.md lists them)"));
}

void ConsoleService::api_post(const std::vector<std::string>& parts, const HttpRequest& request,
                              Respond respond) {
  if (options_.read_only) return respond(error_response(403, "this console is read-only"));
  if (const std::string refused = refuse_change(request, options_.token); !refused.empty()) {
    return respond(error_response(refused.rfind("Content-Type", 0) == 0 ? 415 : 403, refused));
  }
  nlohmann::json args;
  try {
    args = request.body.empty() ? nlohmann::json::object() : nlohmann::json::parse(request.body);
  } catch (const nlohmann::json::exception&) {
    return respond(error_response(400, "the body is not JSON"));
  }
  if (!args.is_object()) return respond(error_response(400, "the body must be a JSON object"));
  const auto changed = [respond](const char* key) {
    return [respond, key](ConsoleChange&& c) {
      if (c.status != ConsoleStatus::kOk) {
        return respond(error_response(http_status(c.status), c.error));
      }
      nlohmann::json j = {{"ok", true}};
      if (key != nullptr) j[key] = c.value;
      respond(json_response(j));
    };
  };
  std::string error;
  const std::size_t n = parts.size();
  if (n == 4 && parts[1] == "tubes") {
    const std::string& tube = parts[2];
    if (!is_valid_tube_name(tube)) return respond(error_response(400, "not a valid tube name"));
    if (parts[3] == "kick") {
      const auto count = number_arg(args, "count", 1, 0, 1e9, &error);
      if (!count) return respond(error_response(400, error));
      return backend_.kick(tube, static_cast<std::uint64_t>(*count), changed("kicked"));
    }
    if (parts[3] == "pause") {
      const auto seconds = number_arg(args, "seconds", 0, 0, kMaxSeconds, &error);
      if (!seconds) return respond(error_response(400, error));
      return backend_.pause(tube, to_millis(*seconds), changed(nullptr));
    }
    if (parts[3] == "move") {
      const auto m = move_args(args, tube, options_.max_move, &error);
      if (!m) return respond(error_response(400, error));
      return backend_.move(tube, m->to, m->list, m->count, changed("moved"));
    }
    if (parts[3] == "put") {
      ConsolePut put;
      if (!put_args(args, options_.max_job_size, &put, &error)) {
        return respond(error_response(400, error));
      }
      return backend_.put(tube, std::move(put), changed("id"));
    }
  }
  if (n == 4 && parts[1] == "jobs") {
    const auto id = whole(parts[2], 1, UINT64_MAX);
    if (!id) return respond(error_response(400, "a job id is a whole number from 1"));
    if (parts[3] == "kick") return backend_.kick_job(*id, changed("kicked"));
    if (parts[3] == "delete") return backend_.remove(*id, changed(nullptr));
  }
  respond(error_response(404, "no such API call (docs/console.md lists them)"));
}

std::string ConsoleService::overview_json(ConsoleOverview& o, std::int64_t now_ms) {
  Sample sample;
  sample.at_ms = now_ms;
  for (const ConsoleTube& t : o.tubes) {
    sample.tubes[t.name] = {t.puts, t.deliveries.value_or(0)};
  }
  if (newer_.at_ms < 0 || now_ms - newer_.at_ms >= 1000) {
    older_ = std::move(newer_);
    newer_ = sample;
  }
  nlohmann::json tubes = nlohmann::json::array();
  const double span = static_cast<double>(now_ms - older_.at_ms) / 1000.0;
  for (const ConsoleTube& t : o.tubes) {
    nlohmann::json j = tube_json(t);
    const auto before = older_.tubes.find(t.name);
    if (older_.at_ms >= 0 && span > 0 && before != older_.tubes.end()) {
      const auto rate = [span](std::uint64_t now, std::uint64_t then) {
        return now >= then ? static_cast<double>(now - then) / span : 0.0;
      };
      j["puts_per_second"] = rate(t.puts, before->second.puts);
      j["deliveries_per_second"] =
          t.deliveries ? nlohmann::json(rate(*t.deliveries, before->second.deliveries))
                       : nlohmann::json();
    } else {
      j["puts_per_second"] = nlohmann::json();
      j["deliveries_per_second"] = nlohmann::json();
    }
    tubes.push_back(std::move(j));
  }
  const nlohmann::json j = {{"backend", std::string(backend_.kind())},
                            {"read_only", options_.read_only},
                            {"at_ms", now_ms},
                            {"tubes_total", o.tubes_total},
                            {"tubes_listed", o.tubes.size()},
                            {"connections", o.connections},
                            {"waiting", o.waiting},
                            {"ready", o.ready},
                            {"delayed", o.delayed},
                            {"reserved", o.reserved},
                            {"buried", o.buried},
                            {"tubes", std::move(tubes)}};
  return json_response(j).body;
}

void ConsoleService::tick(std::int64_t now_ms) {
  ConsoleHistogram h = backend_.lateness();
  if (!last_lateness_.counts.empty() && last_lateness_.counts.size() == h.counts.size()) {
    std::vector<std::uint64_t> delta(h.counts.size());
    std::uint64_t n = 0;
    for (std::size_t i = 0; i < delta.size(); ++i) {
      delta[i] =
          h.counts[i] >= last_lateness_.counts[i] ? h.counts[i] - last_lateness_.counts[i] : 0;
      n += delta[i];
    }
    history_.push_back({now_ms, n, quantile(h.bounds, delta, n, 0.5),
                        quantile(h.bounds, delta, n, 0.9), quantile(h.bounds, delta, n, 0.99)});
    while (history_.size() > options_.history) history_.pop_front();
  }
  last_lateness_ = std::move(h);
}

}  // namespace wheel::jobs::console
