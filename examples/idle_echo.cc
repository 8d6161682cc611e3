// SPDX-License-Identifier: Apache-2.0
// idle-echo: wheel::net's idle detector in a bare libuv program — a uv_tcp_t echo server, no
// TcpServer — written only against the public headers. Each connection embeds an IdleWatch;
// a client silent for IDLE_MS gets "BYE idle" and is closed. After MAX_CLIENTS connections
// have ended, the server shuts down in the order that lets uv_run() return:
//   1. unwatch every connection still watched and close its handle,
//   2. close the LoopTimer (a forgotten close() keeps the loop alive: its async handle stays
//      open, so uv_run() never returns),
//   3. close the listener; uv_run() returns once every handle has finished closing.
//
//   idle-echo PORT IDLE_MS MAX_CLIENTS      (PORT 0: any free port; prints "listening on ...")
#include <uv.h>

#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <unordered_map>

#include "wheel/net/idle_detector.h"
#include "wheel/net/loop_timer.h"

namespace {

struct Connection {
  uv_tcp_t tcp;
  std::uint64_t id = 0;
  wheel::net::IdleWatch watch;
};

class EchoServer final : public wheel::net::IdleDetector::Owner {
 public:
  EchoServer(uv_loop_t* loop, std::chrono::milliseconds idle, int max_clients)
      : loop_(loop),
        timer_(loop, options()),
        detector_(timer_, *this),
        idle_(idle),
        clients_left_(max_clients) {
    uv_tcp_init(loop, &listener_);
    listener_.data = this;
  }

  // Binds and listens; returns the port, or -1 (the libuv error is printed).
  int listen(int port) {
    sockaddr_in addr{};
    uv_ip4_addr("127.0.0.1", port, &addr);
    int rc = uv_tcp_bind(&listener_, reinterpret_cast<const sockaddr*>(&addr), 0);
    if (rc == 0) rc = uv_listen(reinterpret_cast<uv_stream_t*>(&listener_), 128, on_connection);
    if (rc != 0) {
      std::fprintf(stderr, "idle-echo: listen on 127.0.0.1:%d: %s\n", port, uv_strerror(rc));
      return -1;
    }
    sockaddr_storage bound{};
    int len = sizeof bound;
    uv_tcp_getsockname(&listener_, reinterpret_cast<sockaddr*>(&bound), &len);
    return ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  }

  // Step 1, 2, 3 of the close order (see the top of the file).
  void shut_down() {
    shutting_down_ = true;
    while (!connections_.empty()) close_connection(*connections_.begin()->second);
    timer_.close();
    uv_close(reinterpret_cast<uv_handle_t*>(&listener_), nullptr);
  }

 private:
  static wheel::TimerOptions options() {
    wheel::TimerOptions o;
    o.tick_duration = std::chrono::milliseconds(10);
    return o;
  }

  wheel::net::IdleWatch* find_watch(std::uint64_t id) override {
    const auto it = connections_.find(id);
    return it == connections_.end() ? nullptr : &it->second->watch;
  }

  void on_idle(std::uint64_t id, wheel::net::IdleEvent) override {
    Connection& c = *connections_.at(id);
    write(c, "BYE idle\n");
    close_connection(c, /*flush=*/true);
  }

  static void on_connection(uv_stream_t* listener, int status) {
    auto* self = static_cast<EchoServer*>(listener->data);
    if (status < 0) return;
    auto* c = new Connection;
    uv_tcp_init(self->loop_, &c->tcp);
    c->tcp.data = self;
    if (uv_accept(listener, reinterpret_cast<uv_stream_t*>(&c->tcp)) != 0) {
      uv_close(reinterpret_cast<uv_handle_t*>(&c->tcp),
               [](uv_handle_t* h) { delete reinterpret_cast<Connection*>(h); });
      return;
    }
    c->id = self->next_id_++;
    self->connections_[c->id] = c;
    self->detector_.watch(c->id, c->watch, wheel::net::IdleTimes{.reader = self->idle_});
    uv_read_start(reinterpret_cast<uv_stream_t*>(&c->tcp), on_alloc, on_read);
  }

  static void on_alloc(uv_handle_t*, std::size_t, uv_buf_t* buf) {
    static char space[4096];  // one loop thread: each read is consumed before the next
    *buf = uv_buf_init(space, sizeof space);
  }

  static void on_read(uv_stream_t* stream, ssize_t n, const uv_buf_t* buf) {
    auto* c = reinterpret_cast<Connection*>(stream);
    auto* self = static_cast<EchoServer*>(stream->data);
    if (n < 0) return self->close_connection(*c);  // EOF or error
    if (n == 0) return;
    c->watch.record_read(self->detector_.now_ms());  // a store: no timer call per read
    self->write(*c, std::string_view(buf->base, static_cast<std::size_t>(n)));
  }

  void write(Connection& c, std::string_view text) {
    struct Write {
      uv_write_t req;
      std::string data;
    };
    auto* w = new Write{{}, std::string(text)};
    const uv_buf_t buf = uv_buf_init(w->data.data(), static_cast<unsigned>(w->data.size()));
    if (uv_write(&w->req, reinterpret_cast<uv_stream_t*>(&c.tcp), &buf, 1,
                 [](uv_write_t* req, int) { delete reinterpret_cast<Write*>(req); }) != 0) {
      delete w;
    }
  }

  // Unwatch first (it cancels the connection's timeouts), then close the handle; with `flush`,
  // after what was written has gone out (uv_shutdown waits for the queued writes).
  void close_connection(Connection& c, bool flush = false) {
    if (!c.watch.watched()) return;  // closing already
    detector_.unwatch(c.watch);
    connections_.erase(c.id);
    static constexpr uv_close_cb kFree = [](uv_handle_t* h) {
      delete reinterpret_cast<Connection*>(h);
    };
    auto* req = flush ? new uv_shutdown_t : nullptr;
    if (req != nullptr) {
      uv_read_stop(reinterpret_cast<uv_stream_t*>(&c.tcp));
      if (uv_shutdown(req, reinterpret_cast<uv_stream_t*>(&c.tcp), [](uv_shutdown_t* r, int) {
            uv_close(reinterpret_cast<uv_handle_t*>(r->handle), kFree);
            delete r;
          }) != 0) {
        delete req;
        req = nullptr;
      }
    }
    if (req == nullptr) uv_close(reinterpret_cast<uv_handle_t*>(&c.tcp), kFree);
    if (!shutting_down_ && --clients_left_ == 0) shut_down();
  }

  uv_loop_t* loop_;
  uv_tcp_t listener_;
  wheel::net::LoopTimer timer_;
  wheel::net::IdleDetector detector_;
  const std::chrono::milliseconds idle_;
  int clients_left_;
  bool shutting_down_ = false;
  std::uint64_t next_id_ = 1;
  std::unordered_map<std::uint64_t, Connection*> connections_;
};

bool parse(const char* text, long min, long max, long* out) {
  const std::string_view s(text);
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size() && *out >= min && *out <= max;
}

}  // namespace

int main(int argc, char** argv) {
  long port = 0, idle_ms = 0, clients = 0;
  if (argc != 4 || !parse(argv[1], 0, 65535, &port) || !parse(argv[2], 1, 86'400'000, &idle_ms) ||
      !parse(argv[3], 1, 1'000'000, &clients)) {
    std::fprintf(stderr,
                 "usage: idle-echo PORT IDLE_MS MAX_CLIENTS\n"
                 "  PORT 0 ..= 65535, IDLE_MS 1 ..= 86400000, MAX_CLIENTS 1 ..= 1000000\n");
    return 2;
  }
  uv_loop_t loop;
  uv_loop_init(&loop);
  int rc = 0;
  {
    EchoServer server(&loop, std::chrono::milliseconds(idle_ms), static_cast<int>(clients));
    const int bound = server.listen(static_cast<int>(port));
    if (bound < 0) {
      server.shut_down();
      rc = 1;
    } else {
      std::printf("listening on 127.0.0.1:%d\n", bound);
      std::fflush(stdout);
    }
    uv_run(&loop, UV_RUN_DEFAULT);  // returns once shut_down() has closed every handle
  }
  return uv_loop_close(&loop) == 0 ? rc : 1;
}
