// SPDX-License-Identifier: Apache-2.0
// ConsoleService: wheel-jobs' web console, as routes for the MetricsHttpServer beside /metrics
// (set_handler): the page (one HTML shell for every view: /, /tubes/NAME, /jobs/ID, with its
// script, style and uPlot, all embedded in the binary) and its JSON API under /api/ (documented
// in docs/console.md), on any ConsoleBackend.
//
// Safe by default:
// - A change is a POST (a GET never changes anything) with the token in X-Wheel-Token (compared
//   in constant time), a JSON body (Content-Type application/json: no HTML form can send one
//   cross-site without a CORS preflight, which is never granted), and, when the browser names an
//   Origin, the origin of the Host it asked. Without the token: 403.
// - Host: with allowed_hosts set (a loopback listener), a request naming another Host is
//   refused (421), so a page of another site whose name was rebound to 127.0.0.1 can read
//   nothing (DNS rebinding).
// - token_for_reads (an explicit --http-token): every /api call needs the token; the page asks
//   for it. Otherwise (loopback, a token made at start) the page carries the token, readable
//   only by pages of the console's own origin.
// - read_only: every change answers 403.
// - Bounds: tubes listed, jobs per list and the offset of a page, bytes of each preview, jobs a
//   search looks at, jobs one move takes.
// - Bodies travel as JSON strings (bytes that are not UTF-8 become U+FFFD) and the page sets
//   them as text (textContent), never as HTML; its Content-Security-Policy allows no inline
//   script either.
//
// Rates (puts and deliveries per second) come from two overviews at least a second apart; the
// lateness history from tick(), which the owner calls about once a second.
//
// Threads: loop thread only (the backend's and the HTTP server's loop).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "wheel/jobs/console/console_backend.h"
#include "wheel/server/http_message.h"

namespace wheel::jobs::console {

struct ConsoleOptions {
  std::string token;  // REQUIRED non-empty: the token of every change
  bool token_for_reads = false;
  bool read_only = false;
  std::vector<std::string> allowed_hosts;  // Host values accepted; empty: any
  std::size_t max_tubes = 1000;            // tubes in an overview
  std::size_t max_jobs = 100;              // jobs per list or search (?jobs=, default 10)
  std::size_t max_preview = 4096;          // bytes of a preview (?preview=, default 200)
  std::size_t max_scan = 10000;            // jobs a search looks at (?scan=, default 1000)
  std::size_t max_offset = 100'000;        // jobs a page skips (?ready_offset= ..., default 0)
  std::size_t max_move = 1000;             // jobs one move takes ({"count"}, default 1)
  std::size_t max_job_size = 65'535;       // bytes of a body put (wheel-jobs' --max-job-size)
  std::size_t history = 600;               // lateness points kept (tick()s: 10 min at 1 s)
  std::function<std::int64_t()> clock;     // Unix ms, for rates; null: the system clock
};

class ConsoleService {
 public:
  using Respond = std::function<void(server::HttpResponse response)>;

  // `backend` must outlive it. Throws std::invalid_argument for an empty token or a zero bound.
  ConsoleService(ConsoleBackend& backend, ConsoleOptions options);

  // The Host values accepted from now on (a listener's port is known once it listens).
  void set_allowed_hosts(std::vector<std::string> hosts) {
    options_.allowed_hosts = std::move(hosts);
  }
  // Answers one request (every path but /metrics), now or once the backend answered.
  void handle(const server::HttpRequest& request, Respond respond);
  // Takes a lateness point at `now_ms` (Unix ms): the deliveries since the last tick.
  void tick(std::int64_t now_ms);
  const std::deque<LatenessPoint>& history() const { return history_; }

 private:
  struct Counts {
    std::uint64_t puts = 0, deliveries = 0;
  };
  struct Sample {
    std::int64_t at_ms = -1;
    std::map<std::string, Counts, std::less<>> tubes;
  };

  void page(const server::HttpRequest& request, Respond& respond);
  void api_get(const std::vector<std::string>& parts, const server::HttpRequest& request,
               Respond respond);
  void api_post(const std::vector<std::string>& parts, const server::HttpRequest& request,
                Respond respond);
  // Adds per-second rates to `o` against the last sample a second or more old; keeps `o`'s.
  std::string overview_json(ConsoleOverview& o, std::int64_t now_ms);

  ConsoleBackend& backend_;
  ConsoleOptions options_;
  Sample older_, newer_;  // the overviews' counts, for rates
  ConsoleHistogram last_lateness_;
  std::deque<LatenessPoint> history_;
  // Held weakly by answers that come later (the store's): one after the service is gone is dropped.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace wheel::jobs::console
