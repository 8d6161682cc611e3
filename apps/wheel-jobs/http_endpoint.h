// SPDX-License-Identifier: Apache-2.0
// wheel-jobs' HTTP listener (--http-port, once --metrics-port): /metrics and the web console
// (wheel::jobs::console) on one MetricsHttpServer, with the console's once-a-second tick. Wiring
// only: the routes, checks and pages are the console library's.
#pragma once

#include <uv.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "wheel/jobs/console/console_backend.h"
#include "wheel/jobs/console/console_service.h"
#include "wheel/server/metrics_http_server.h"

namespace wheel::jobs_app {

struct HttpEndpointOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
  std::string token;       // --http-token (or WHEEL_JOBS_HTTP_TOKEN); empty: one made at start
  bool read_only = false;  // --http-read-only
  bool console = true;     // false: /metrics only (--no-console)
  std::uint32_t max_job_size = 65'535;
};

// True when `host` resolves to a loopback address (127.0.0.0/8, ::1). Throws as
// net::resolve_address() does.
bool is_loopback_host(const std::string& host);

// What is wrong with `options` ("" when nothing): `given`, the console options set on the
// command line, need a port; a token must be 16 to 256 letters, digits, '-', '_' or '.'; a
// console anywhere but loopback needs a token. Each message names its option.
std::string check_http_options(const HttpEndpointOptions& options,
                               const std::vector<std::string>& given);

class HttpEndpoint {
 public:
  // The endpoint on `loop` with `render` for /metrics and `backend` for the console (which must
  // outlive the endpoint). Not listening yet; close() and run the loop before destroying it.
  HttpEndpoint(uv_loop_t* loop, const HttpEndpointOptions& options,
               server::MetricsHttpServer::AsyncRender render,
               jobs::console::ConsoleBackend& backend);
  ~HttpEndpoint();
  HttpEndpoint(const HttpEndpoint&) = delete;
  HttpEndpoint& operator=(const HttpEndpoint&) = delete;

  // Listens; throws std::runtime_error naming the endpoint when it cannot.
  void listen();
  // Stops listening and the tick (idempotent).
  void close();

 private:
  uv_loop_t* loop_;
  HttpEndpointOptions options_;
  std::unique_ptr<jobs::console::ConsoleService> console_;
  std::unique_ptr<server::MetricsHttpServer> server_;
  uv_timer_t* tick_ = nullptr;  // freed by its close callback
};

}  // namespace wheel::jobs_app
