// SPDX-License-Identifier: Apache-2.0
#include "wheel/server/metrics_http_server.h"

#include <spdlog/spdlog.h>

#include <cassert>
#include <stdexcept>
#include <string_view>
#include <system_error>

#include "wheel/logger.h"
#include "wheel/net/socket_address.h"
#include "wheel/net/uv_error.h"
#include "wheel/server/prometheus_text.h"

namespace wheel::server {
namespace {

std::string response(std::string_view status, std::string_view content_type,
                     std::string_view extra_headers, std::string_view body, bool with_body) {
  std::string out;
  out.reserve(160 + (with_body ? body.size() : 0));
  out.append("HTTP/1.1 ").append(status).append("\r\n");
  out.append("Content-Type: ").append(content_type).append("\r\n");
  out.append("Content-Length: ").append(std::to_string(body.size())).append("\r\n");
  out.append(extra_headers);
  out.append("Connection: close\r\n\r\n");
  if (with_body) out.append(body);
  return out;
}

std::string plain(std::string_view status, std::string_view extra = {}) {
  return response(status, "text/plain; charset=utf-8", extra, std::string(status) + "\n", true);
}

}  // namespace

struct MetricsHttpServer::Client {
  MetricsHttpServer* server;
  uv_tcp_t tcp;
  uv_timer_t timer;
  uv_write_t write;
  std::string request;  // the bytes read: head, then body
  HttpRequest parsed;   // once head_done
  std::size_t head_bytes = 0;
  std::uint64_t body_bytes = 0;
  bool head_done = false;
  std::string reply;
  int open = 0;  // handles of this client still open
  bool finishing = false;
  bool rendering = false;  // a 200 waits for its text (async render) or a handler's answer
  bool routed = false;     // its request went to the handler
  bool head_only = false;
  std::uint64_t serial = 0;  // finds it again for an async reply
  Client* prev = nullptr;
  Client* next = nullptr;
};

MetricsHttpServer::MetricsHttpServer(uv_loop_t* loop, MetricsHttpOptions options, Render render)
    : MetricsHttpServer(
          loop, std::move(options),
          AsyncRender([render = std::move(render)](Reply reply) { reply(render()); })) {}

MetricsHttpServer::MetricsHttpServer(uv_loop_t* loop, MetricsHttpOptions options,
                                     AsyncRender render)
    : loop_(loop), options_(std::move(options)), render_(std::move(render)) {
  net::check_uv(uv_tcp_init(loop_, &listener_), "uv_tcp_init");
  ++open_handles_;
  listener_.data = this;
}

std::uint16_t MetricsHttpServer::listen() {
  const sockaddr_storage address = net::resolve_address(options_.host, options_.port);
  net::check_uv(uv_tcp_bind(&listener_, reinterpret_cast<const sockaddr*>(&address), 0), "bind");
  net::check_uv(uv_listen(reinterpret_cast<uv_stream_t*>(&listener_), 64, &on_connection),
                "listen");
  sockaddr_storage bound{};
  int length = sizeof(bound);
  net::check_uv(uv_tcp_getsockname(&listener_, reinterpret_cast<sockaddr*>(&bound), &length),
                "getsockname");
  // sin_port and sin6_port share their offset.
  port_ = ntohs(reinterpret_cast<const sockaddr_in*>(&bound)->sin_port);
  return port_;
}

MetricsHttpServer::~MetricsHttpServer() {
  assert(closed() && "close() and run the loop before destroying the MetricsHttpServer");
  alive_.reset();  // an async render's reply that comes later finds no server
}

void MetricsHttpServer::close() {
  if (closing_) return;
  closing_ = true;
  uv_close(reinterpret_cast<uv_handle_t*>(&listener_),
           [](uv_handle_t* h) { --static_cast<MetricsHttpServer*>(h->data)->open_handles_; });
  while (first_client_ != nullptr) finish(first_client_);
}

void MetricsHttpServer::add_descriptors(std::vector<int>* fds) const {
  uv_os_fd_t fd;
  if (uv_fileno(reinterpret_cast<const uv_handle_t*>(&listener_), &fd) == 0) fds->push_back(fd);
  for (const Client* c = first_client_; c != nullptr; c = c->next) {
    if (uv_fileno(reinterpret_cast<const uv_handle_t*>(&c->tcp), &fd) == 0) fds->push_back(fd);
  }
}

void MetricsHttpServer::on_connection(uv_stream_t* listener, int status) {
  auto* self = static_cast<MetricsHttpServer*>(listener->data);
  if (status < 0 || self->closing_) return;
  auto* c = new Client{};
  c->server = self;
  c->serial = ++self->next_serial_;
  if (uv_tcp_init(self->loop_, &c->tcp) != 0) {
    delete c;
    return;
  }
  c->tcp.data = c;
  c->open = 1;
  ++self->open_handles_;
  // Linked first: finish() unlinks.
  c->next = self->first_client_;
  if (c->next != nullptr) c->next->prev = c;
  self->first_client_ = c;
  ++self->clients_;
  if (uv_accept(listener, reinterpret_cast<uv_stream_t*>(&c->tcp)) != 0) return self->finish(c);
  if (self->clients_ > self->options_.max_clients) {
    // Over the bound: make room by closing the oldest client still sending its head (as
    // servers survive slowloris: clients that hold a connection without asking cannot starve
    // a scraper that asks at once). Else the oldest waiting for a handler's answer (a console
    // page whose store is slow must not starve a scrape either); it gets 503. Only when every
    // client is being answered otherwise is the new one closed unanswered.
    Client* oldest = nullptr;
    Client* oldest_routed = nullptr;
    for (Client* o = c->next; o != nullptr; o = o->next) {
      if (o->finishing) continue;
      if (!o->rendering && o->reply.empty()) oldest = o;
      if (o->rendering && o->routed) oldest_routed = o;
    }
    if (oldest == nullptr && oldest_routed != nullptr) {
      ++self->evicted_;
      oldest_routed->rendering = false;
      if (oldest_routed->open > 1) uv_timer_stop(&oldest_routed->timer);
      oldest_routed->reply = plain("503 Service Unavailable");
      self->write(oldest_routed);
    } else if (oldest == nullptr) {
      return self->finish(c);
    } else {
      ++self->evicted_;
      self->finish(oldest);
    }
  }
  if (uv_timer_init(self->loop_, &c->timer) != 0) return self->finish(c);
  c->timer.data = c;
  ++c->open;
  ++self->open_handles_;
  uv_timer_start(&c->timer, &MetricsHttpServer::on_timeout,
                 static_cast<std::uint64_t>(self->options_.read_timeout.count()), 0);
  const int rc = uv_read_start(
      reinterpret_cast<uv_stream_t*>(&c->tcp),
      [](uv_handle_t*, std::size_t, uv_buf_t* buf) {
        static thread_local char buffer[4096];
        *buf = uv_buf_init(buffer, sizeof(buffer));
      },
      [](uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf) {
        auto* client = static_cast<Client*>(stream->data);
        if (nread < 0) return client->server->finish(client);  // EOF or error before the end
        if (nread == 0) return;
        client->server->read(client, std::string_view(buf->base, static_cast<std::size_t>(nread)));
      });
  if (rc != 0) self->finish(c);
}

void MetricsHttpServer::read(Client* c, std::string_view bytes) {
  const std::size_t before = c->request.size();
  c->request.append(bytes);
  if (!c->head_done) {
    // Search from a little before the new bytes: the blank line may straddle reads.
    const std::size_t from = before >= 3 ? before - 3 : 0;
    const bool complete = c->request.find("\r\n\r\n", from) != std::string::npos ||
                          c->request.find("\n\n", from) != std::string::npos;
    // A head is held up to max_request bytes plus one read (4 KiB).
    if (!complete) {
      if (c->request.size() > options_.max_request) {
        c->reply = plain("431 Request Header Fields Too Large");
        answer(c);
      }
      return;
    }
    HeadParse parsed = parse_request_head(c->request);
    c->head_done = true;
    if (parsed.head_bytes > options_.max_request) {
      c->reply = plain("431 Request Header Fields Too Large");
    } else if (parsed.status != HeadParse::Status::kOk) {
      c->reply = plain("400 Bad Request");
    } else if (parsed.body_bytes > options_.max_body) {
      c->reply = plain("413 Content Too Large");
    } else {
      c->parsed = std::move(parsed.request);
      c->head_bytes = parsed.head_bytes;
      c->body_bytes = parsed.body_bytes;
    }
    if (!c->reply.empty()) return answer(c);
  }
  if (c->request.size() - c->head_bytes < c->body_bytes) return;  // more body to come
  c->parsed.body = c->request.substr(c->head_bytes, c->body_bytes);
  answer(c);
}

void MetricsHttpServer::on_timeout(uv_timer_t* t) {
  auto* client = static_cast<Client*>(t->data);
  if (client->rendering) {  // the text did not come in time
    client->rendering = false;
    client->reply = plain("503 Service Unavailable");
    return client->server->write(client);
  }
  client->reply = plain("408 Request Timeout");
  client->server->answer(client);
}

void MetricsHttpServer::answer(Client* c) {
  if (c->finishing || c->rendering) return;
  uv_read_stop(reinterpret_cast<uv_stream_t*>(&c->tcp));
  if (c->open > 1) uv_timer_stop(&c->timer);
  if (c->reply.empty()) {
    const HttpRequest& r = c->parsed;
    const bool head_only = r.method == "HEAD";
    const bool metrics = r.path == "/metrics" && (r.method == "GET" || head_only);
    c->head_only = head_only;
    if (!metrics && handler_) {
      c->routed = true;
      start_waiting(c);
      std::weak_ptr<bool> alive = alive_;
      handler_(r, [this, alive, serial = c->serial](HttpResponse response) {
        if (!alive.expired()) responded(serial, std::move(response));
      });
      return;
    }
    if (r.method != "GET" && !head_only) {
      c->reply = plain("405 Method Not Allowed", "Allow: GET, HEAD\r\n");
    } else if (r.path != "/metrics") {
      c->reply = plain("404 Not Found");
    } else {
      // The text comes through rendered(), now or later; the timer bounds the wait.
      start_waiting(c);
      std::weak_ptr<bool> alive = alive_;
      render_([this, alive, serial = c->serial](std::string text) {
        if (!alive.expired()) rendered(serial, std::move(text));
      });
      return;
    }
  }
  write(c);
}

void MetricsHttpServer::start_waiting(Client* c) {
  c->rendering = true;
  if (c->open > 1) {
    uv_timer_start(&c->timer, &MetricsHttpServer::on_timeout,
                   static_cast<std::uint64_t>(options_.read_timeout.count()), 0);
  }
}

void MetricsHttpServer::rendered(std::uint64_t serial, std::string text) {
  HttpResponse r;
  r.content_type = std::string(kPrometheusContentType);
  r.body = std::move(text);
  responded(serial, std::move(r));
}

void MetricsHttpServer::responded(std::uint64_t serial, HttpResponse response) {
  Client* c = first_client_;
  while (c != nullptr && c->serial != serial) c = c->next;
  if (c == nullptr || c->finishing || !c->rendering) return;  // gone, or answered 503
  c->rendering = false;
  if (c->open > 1) uv_timer_stop(&c->timer);
  c->reply = render_http(response, !c->head_only);
  write(c);
}

void MetricsHttpServer::write(Client* c) {
  ++responses_;
  c->request.clear();
  c->request.shrink_to_fit();
  c->write.data = c;
  uv_buf_t buf = uv_buf_init(c->reply.data(), static_cast<unsigned>(c->reply.size()));
  const int rc =
      uv_write(&c->write, reinterpret_cast<uv_stream_t*>(&c->tcp), &buf, 1, [](uv_write_t* w, int) {
        auto* client = static_cast<Client*>(w->data);
        client->server->finish(client);
      });
  if (rc != 0) finish(c);
}

void MetricsHttpServer::finish(Client* c) {
  if (c->finishing) return;
  c->finishing = true;
  if (c->prev != nullptr) c->prev->next = c->next;
  if (c->next != nullptr) c->next->prev = c->prev;
  if (first_client_ == c) first_client_ = c->next;
  --clients_;
  const auto closed = [](uv_handle_t* h) {
    auto* client = static_cast<Client*>(h->data);
    --client->server->open_handles_;
    if (--client->open == 0) delete client;
  };
  if (c->open > 1) uv_close(reinterpret_cast<uv_handle_t*>(&c->timer), closed);
  uv_close(reinterpret_cast<uv_handle_t*>(&c->tcp), closed);
}

}  // namespace wheel::server
