// SPDX-License-Identifier: Apache-2.0
#include "http_endpoint.h"

#include <netinet/in.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <random>
#include <stdexcept>

#include "wheel/logger.h"
#include "wheel/net/socket_address.h"

namespace wheel::jobs_app {
namespace {

std::string random_token() {
  std::random_device device;
  std::string token;
  char part[9];
  for (int i = 0; i < 4; ++i) {
    std::snprintf(part, sizeof part, "%08x", device());
    token += part;
  }
  return token;
}

std::int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

bool is_loopback_host(const std::string& host) {
  const sockaddr_storage a = net::resolve_address(host, 0);
  if (a.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&a);
    return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
  }
  if (a.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&a);
    return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
  }
  return false;
}

std::string check_http_options(const HttpEndpointOptions& h,
                               const std::vector<std::string>& given) {
  if (h.port == 0) {
    return given.empty() ? std::string() : given.front() + ": needs --http-port";
  }
  bool loopback = false;
  try {
    loopback = is_loopback_host(h.host);
  } catch (const std::exception& e) {
    return "--http-host: " + std::string(e.what());
  }
  if (!h.token.empty()) {
    const bool chars_ok = std::all_of(h.token.begin(), h.token.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.';
    });
    if (h.token.size() < 16 || h.token.size() > 256 || !chars_ok) {
      return "--http-token: must be 16 to 256 letters, digits, '-', '_' or '.'";
    }
  } else if (!loopback && h.console) {
    return "--http-host: " + h.host +
           " is not a loopback address: the web console there needs --http-token (or "
           "WHEEL_JOBS_HTTP_TOKEN), or --no-console";
  }
  return {};
}

HttpEndpoint::HttpEndpoint(uv_loop_t* loop, const HttpEndpointOptions& options,
                           server::MetricsHttpServer::AsyncRender render,
                           jobs::console::ConsoleBackend& backend)
    : loop_(loop), options_(options) {
  server::MetricsHttpOptions http;
  http.host = options.host;
  http.port = options.port;
  // A put's JSON: its body escaped (up to 6 bytes per byte) and a few fields.
  http.max_body = options.console ? std::size_t{options.max_job_size} * 6 + 4096 : 0;
  server_ = std::make_unique<server::MetricsHttpServer>(loop, http, std::move(render));
  if (!options.console) return;
  jobs::console::ConsoleOptions c;
  c.token_for_reads = !options.token.empty();
  c.token = c.token_for_reads ? options.token : random_token();
  c.read_only = options.read_only;
  c.max_job_size = options.max_job_size;
  console_ = std::make_unique<jobs::console::ConsoleService>(backend, std::move(c));
  server_->set_handler(
      [this](const server::HttpRequest& request, server::MetricsHttpServer::Respond respond) {
        console_->handle(request, std::move(respond));
      });
  tick_ = new uv_timer_t;
  uv_timer_init(loop, tick_);
  tick_->data = this;
  uv_timer_start(
      tick_, [](uv_timer_t* t) { static_cast<HttpEndpoint*>(t->data)->console_->tick(unix_ms()); },
      1000, 1000);
  uv_unref(reinterpret_cast<uv_handle_t*>(tick_));
}

HttpEndpoint::~HttpEndpoint() = default;

void HttpEndpoint::listen() {
  std::uint16_t port = 0;
  try {
    port = server_->listen();
  } catch (const std::exception& e) {
    throw std::runtime_error("cannot serve HTTP on " +
                             net::format_host_port(options_.host, options_.port) + ": " + e.what());
  }
  if (!console_) return;
  if (is_loopback_host(options_.host)) {
    // Only the names of this listener: a page whose own name was rebound to 127.0.0.1 names
    // its own host, and is refused (DNS rebinding).
    const std::string p = ":" + std::to_string(port);
    console_->set_allowed_hosts({"127.0.0.1" + p, "localhost" + p, "[::1]" + p,
                                 net::format_host_port(options_.host, port)});
  }
  logger()->info("wheel-jobs: console at http://{}/{}", net::format_host_port(options_.host, port),
                 options_.read_only ? " (read-only)" : "");
}

void HttpEndpoint::close() {
  server_->close();
  if (tick_ != nullptr) {
    uv_close(reinterpret_cast<uv_handle_t*>(tick_),
             [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
    tick_ = nullptr;
  }
}

}  // namespace wheel::jobs_app
