// SPDX-License-Identifier: Apache-2.0
// A tiny PING/PONG line server for wheel-load's tests, independent of wheel-server so that the
// tester is checked against a second implementation, and so that a server which never closes
// idle connections (or closes them too soon) is easy to have.
//
// Usage: line_server [--port 0] [--idle-ms N] [--delay-lag-ms L]
//   N = 0: never close idle connections; L: deliver every DELAYED L ms after it is due.
// Prints "listening on 127.0.0.1:PORT" once on stdout. PING -> PONG, QUIT -> BYE + close,
// "DELAY <ms> <text>" -> OK, and after ms + L: "DELAYED <text>"; anything else -> "ERR unknown
// command"; N ms without input -> "BYE idle" + close. SIGTERM ends it.
#include <uv.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "wheel/net/line_framer.h"

namespace {

std::uint64_t g_idle_ms = 0;
std::uint64_t g_delay_lag_ms = 0;
char g_buffer[65536];
const wheel::net::LineFramer g_framer(4096);  // the framer of net/ and wheel-load

struct Client;

// One pending DELAY: its own timer; freed when the timer's handle is closed.
struct Delayed {
  uv_timer_t timer;
  Client* client;
  std::string line;  // "DELAYED <text>\n"
};

struct Client {
  uv_tcp_t tcp;
  uv_timer_t idle;
  wheel::net::LineBuffer partial;
  std::vector<Delayed*> delayed;
  int open_handles = 2;
};

void free_when_closed(uv_handle_t* h) {
  auto* c = static_cast<Client*>(h->data);
  if (--c->open_handles == 0) delete c;
}

void free_delayed(uv_handle_t* h) {
  auto* d = static_cast<Delayed*>(h->data);
  free_when_closed(reinterpret_cast<uv_handle_t*>(&d->client->tcp));
  delete d;
}

void close_client(Client* c) {
  if (uv_is_closing(reinterpret_cast<uv_handle_t*>(&c->tcp))) return;
  uv_close(reinterpret_cast<uv_handle_t*>(&c->tcp), free_when_closed);
  uv_close(reinterpret_cast<uv_handle_t*>(&c->idle), free_when_closed);
  for (Delayed* d : c->delayed) uv_close(reinterpret_cast<uv_handle_t*>(&d->timer), free_delayed);
  c->delayed.clear();
}

struct WriteThenClose {
  uv_write_t req;
  Client* client;
  bool close_after;
  std::string text;  // owned: the write may complete after the caller's buffer is gone
};

void reply(Client* c, std::string_view text, bool close_after) {
  auto* w = new WriteThenClose{{}, c, close_after, std::string(text)};
  uv_buf_t b = uv_buf_init(w->text.data(), static_cast<unsigned>(w->text.size()));
  w->req.data = w;
  const int e = uv_write(&w->req, reinterpret_cast<uv_stream_t*>(&c->tcp), &b, 1,
                         [](uv_write_t* req, int status) {
                           auto* w = static_cast<WriteThenClose*>(req->data);
                           if (w->close_after || status < 0) close_client(w->client);
                           delete w;
                         });
  if (e != 0) {
    delete w;
    close_client(c);
  }
}

void on_delayed(uv_timer_t* t) {
  auto* d = static_cast<Delayed*>(t->data);
  Client* c = d->client;
  reply(c, d->line, false);
  std::erase(c->delayed, d);
  uv_close(reinterpret_cast<uv_handle_t*>(&d->timer), free_delayed);
}

// "DELAY <ms> <text>": OK now, the text later.
void schedule_delayed(Client* c, std::string_view args) {
  const auto space = args.find(' ');
  const std::uint64_t ms = std::strtoull(std::string(args.substr(0, space)).c_str(), nullptr, 10);
  auto* d = new Delayed{{}, c, "DELAYED "};
  d->line.append(space == std::string_view::npos ? "" : args.substr(space + 1)).append("\n");
  uv_timer_init(c->tcp.loop, &d->timer);
  d->timer.data = d;
  ++c->open_handles;
  c->delayed.push_back(d);
  uv_timer_start(&d->timer, on_delayed, ms + g_delay_lag_ms, 0);
  reply(c, "OK\n", false);
}

void on_idle(uv_timer_t* t) {
  uv_timer_stop(t);
  reply(static_cast<Client*>(t->data), "BYE idle\n", true);
}

void on_read(uv_stream_t* s, ssize_t n, const uv_buf_t* buf) {
  auto* c = static_cast<Client*>(s->data);
  if (n < 0) return close_client(c);
  if (g_idle_ms > 0) uv_timer_again(&c->idle);
  const std::string_view bytes(buf->base, static_cast<std::size_t>(n));
  const auto result = g_framer.feed(c->partial, bytes, [&](std::string_view line) {
    const bool quit = line == "QUIT";
    if (line.starts_with("DELAY ")) {
      schedule_delayed(c, line.substr(6));
    } else {
      reply(c, line == "PING" ? "PONG\n" : quit ? "BYE\n" : "ERR unknown command\n", quit);
    }
    if (quit) uv_read_stop(s);
    return !quit;
  });
  if (result == wheel::net::LineFramer::Result::kLineTooLong) {
    reply(c, "ERR line too long\n", true);
    uv_read_stop(s);
  }
}

void on_connection(uv_stream_t* server, int status) {
  if (status < 0) return;
  auto* c = new Client;
  uv_tcp_init(server->loop, &c->tcp);
  uv_timer_init(server->loop, &c->idle);
  c->tcp.data = c->idle.data = c;
  if (uv_accept(server, reinterpret_cast<uv_stream_t*>(&c->tcp)) != 0) return close_client(c);
  if (g_idle_ms > 0) uv_timer_start(&c->idle, on_idle, g_idle_ms, g_idle_ms);
  uv_read_start(
      reinterpret_cast<uv_stream_t*>(&c->tcp),
      [](uv_handle_t*, std::size_t, uv_buf_t* b) { *b = uv_buf_init(g_buffer, sizeof g_buffer); },
      on_read);
}

}  // namespace

int main(int argc, char** argv) {
  int port = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--port") == 0) port = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--idle-ms") == 0) g_idle_ms = std::strtoull(argv[i + 1], nullptr, 10);
    if (std::strcmp(argv[i], "--delay-lag-ms") == 0) {
      g_delay_lag_ms = std::strtoull(argv[i + 1], nullptr, 10);
    }
  }
  std::signal(SIGPIPE, SIG_IGN);
  uv_loop_t* loop = uv_default_loop();
  uv_tcp_t server;
  uv_tcp_init(loop, &server);
  sockaddr_in addr{};
  uv_ip4_addr("127.0.0.1", port, &addr);
  if (uv_tcp_bind(&server, reinterpret_cast<const sockaddr*>(&addr), 0) != 0 ||
      uv_listen(reinterpret_cast<uv_stream_t*>(&server), 4096, on_connection) != 0) {
    std::fprintf(stderr, "line_server: cannot listen on port %d\n", port);
    return 1;
  }
  int len = sizeof addr;
  uv_tcp_getsockname(&server, reinterpret_cast<sockaddr*>(&addr), &len);
  std::printf("listening on 127.0.0.1:%d\n", ntohs(addr.sin_port));
  std::fflush(stdout);
  // SIGTERM's default action ends the process: the test that started it has its report.
  return uv_run(loop, UV_RUN_DEFAULT);
}
