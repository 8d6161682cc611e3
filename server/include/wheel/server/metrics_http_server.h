// SPDX-License-Identifier: Apache-2.0
// MetricsHttpServer: the scrape endpoint. A minimal HTTP/1.1 server on a libuv loop that
// answers `GET /metrics` (a query string is ignored) with the text a callback renders, served
// as the Prometheus text format (kPrometheusContentType), then closes the connection
// ("Connection: close": one request per connection, as a scraper needs).
//
// A hostile or broken scraper holds bounded resources: at most max_clients connections (past
// it a new client makes room by closing the oldest one still sending its head, so that slow
// clients holding connections cannot deny a scrape; only when every client is being answered
// is the new one closed), a request head of at most max_request bytes (more: 431 and close), and
// read_timeout from accept to a complete head (a slow client gets 408 and a close, however
// it drips its bytes). Other paths: 404; other methods: 405 with "Allow: GET, HEAD"; HEAD:
// the headers of the GET; a malformed request line: 400. A request body is never read.
//
// The text may also be rendered asynchronously (a count read from another server): the render
// callback gets a Reply to call once with the text, later, on the loop thread. The client waits
// for it up to read_timeout (then 503 and a close); a reply for a client gone meanwhile (closed,
// timed out, the server closed or destroyed) is dropped.
//
// Other routes (a console beside the metrics): set_handler() hands every request but GET/HEAD
// /metrics to a handler, with its body (a POST's Content-Length up to max_body bytes; more: 413;
// Transfer-Encoding: 400). The handler answers through its Respond, at once or later, within
// read_timeout as a render does (else 503). Without a handler the old answers stand (404, 405).
// /metrics is answered the same way with or without one, so a console never changes a scrape;
// clients of either kind share max_clients and the eviction of the oldest one still sending;
// when none is, the oldest waiting for the handler's answer gets 503 and makes room.
//
// Loop thread only: every method, and the render callback, runs on the loop's thread.
#pragma once

#include <uv.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "wheel/server/http_message.h"

namespace wheel::server {

struct MetricsHttpOptions {
  // IPv4 or IPv6 address or host name (see net::resolve_address()); loopback by default, since
  // the metrics tell anyone who can reach them about the server's load.
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;          // 0 picks a free one (port() tells which)
  std::size_t max_request = 8192;  // bytes of a request's head
  std::size_t max_body = 0;        // bytes of a request's body (handler routes only)
  std::chrono::milliseconds read_timeout{5000};
  std::size_t max_clients = 64;
};

class MetricsHttpServer {
 public:
  using Render = std::function<std::string()>;
  using Reply = std::function<void(std::string text)>;
  using AsyncRender = std::function<void(Reply reply)>;
  using Respond = std::function<void(HttpResponse response)>;
  using Handler = std::function<void(const HttpRequest& request, Respond respond)>;

  // A server on `loop`, not listening yet. `loop` must outlive it. Throws std::system_error
  // when libuv fails. From here on the owner must close() it and run the loop until closed()
  // before destroying it (also when listen() throws).
  MetricsHttpServer(uv_loop_t* loop, MetricsHttpOptions options, Render render);
  // The same, with a text rendered asynchronously: `render` must call its Reply once, on the
  // loop thread (at once or later).
  MetricsHttpServer(uv_loop_t* loop, MetricsHttpOptions options, AsyncRender render);
  // REQUIRES: close() was called and the loop ran its close callbacks (closed() is true).
  ~MetricsHttpServer();
  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;

  // Routes every request but GET/HEAD /metrics to `handler`, which must call its Respond once, on
  // the loop thread (a Respond called after the client is gone does nothing). Call before
  // listen().
  void set_handler(Handler handler) { handler_ = std::move(handler); }

  // Binds and listens; returns the bound port. Throws std::invalid_argument for a host that
  // does not resolve, std::system_error when it cannot listen (EADDRINUSE, ...). Call once.
  std::uint16_t listen();
  // The bound port; 0 before listen().
  std::uint16_t port() const { return port_; }
  // Stops listening and closes every client connection (a response being written is cut
  // short). Idempotent; the handles close on the loop's next turn.
  void close();
  // True once every handle of the server has closed.
  bool closed() const { return open_handles_ == 0; }
  // Appends the server's socket descriptors (listener, clients) to `fds`: what a child forked
  // from the loop's process closes so that it never holds the endpoint open.
  void add_descriptors(std::vector<int>* fds) const;
  // Requests answered so far (any status).
  std::uint64_t responses() const { return responses_; }
  // Clients closed unanswered to make room for a newer one (see above).
  std::uint64_t evicted() const { return evicted_; }

 private:
  struct Client;
  static void on_connection(uv_stream_t* listener, int status);
  static void on_timeout(uv_timer_t* timer);  // no full head, or no async text, in time
  void answer(Client* client);
  void rendered(std::uint64_t serial, std::string text);        // an async render's reply
  void responded(std::uint64_t serial, HttpResponse response);  // a handler's answer
  void read(Client* client, std::string_view bytes);
  // Waits for `c`'s answer (a render's text or a handler's response) up to read_timeout.
  void start_waiting(Client* c);
  void write(Client* client);
  void finish(Client* client);  // closes a client's handles

  uv_loop_t* loop_;
  const MetricsHttpOptions options_;
  const AsyncRender render_;
  Handler handler_;
  uv_tcp_t listener_;
  std::uint16_t port_ = 0;
  bool closing_ = false;
  int open_handles_ = 0;  // the listener and every client's two handles
  std::size_t clients_ = 0;
  Client* first_client_ = nullptr;  // every client not yet finishing, for close()
  std::uint64_t responses_ = 0;
  std::uint64_t evicted_ = 0;
  std::uint64_t next_serial_ = 0;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // replies hold it weakly
};

}  // namespace wheel::server
