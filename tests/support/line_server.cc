// A tiny PING/PONG line server for wheel-load's tests, independent of wheel-server so that the
// tester is checked against a second implementation, and so that a server which never closes
// idle connections (or closes them too soon) is easy to have.
//
// Usage: line_server [--port 0] [--idle-ms N]   (N = 0: never close idle connections)
// Prints "listening on 127.0.0.1:PORT" once on stdout. PING -> PONG, QUIT -> BYE + close,
// N ms without input -> "BYE idle" + close. SIGTERM ends it.
#include <uv.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "wheel/net/line_framer.h"

namespace {

std::uint64_t g_idle_ms = 0;
char g_buffer[65536];
const wheel::net::LineFramer g_framer(4096);  // the framer of net/ and wheel-load

struct Client {
  uv_tcp_t tcp;
  uv_timer_t idle;
  wheel::net::LineBuffer partial;
  int open_handles = 2;
};

void free_when_closed(uv_handle_t* h) {
  auto* c = static_cast<Client*>(h->data);
  if (--c->open_handles == 0) delete c;
}

void close_client(Client* c) {
  if (uv_is_closing(reinterpret_cast<uv_handle_t*>(&c->tcp))) return;
  uv_close(reinterpret_cast<uv_handle_t*>(&c->tcp), free_when_closed);
  uv_close(reinterpret_cast<uv_handle_t*>(&c->idle), free_when_closed);
}

struct WriteThenClose {
  uv_write_t req;
  Client* client;
  bool close_after;
};

void reply(Client* c, const char* text, bool close_after) {
  auto* w = new WriteThenClose{{}, c, close_after};
  uv_buf_t b = uv_buf_init(const_cast<char*>(text), static_cast<unsigned>(std::strlen(text)));
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
    reply(c, line == "PING" ? "PONG\n" : quit ? "BYE\n" : "ERR unknown command\n", quit);
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
