// SPDX-License-Identifier: Apache-2.0
// wheel::server's MetricsHttpServer (GET /metrics) on a loop thread of its own, against broken
// and hostile scrapers: wrong paths and methods, oversized requests, slow and idle clients.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "wheel/server/metrics_http_server.h"

namespace wheel::server {
namespace {

using namespace std::chrono_literals;

// A MetricsHttpServer on a loop thread of its own.
class Endpoint {
 public:
  explicit Endpoint(wheel::server::MetricsHttpOptions options) {
    uv_loop_init(&loop_);
    uv_async_init(&loop_, &stop_, [](uv_async_t* a) {
      auto* self = static_cast<Endpoint*>(a->data);
      self->server_->close();
      uv_close(reinterpret_cast<uv_handle_t*>(&self->stop_), nullptr);
    });
    stop_.data = this;
    server_ = std::make_unique<MetricsHttpServer>(&loop_, options, [this] {
      ++renders_;
      return std::string("# TYPE x_total counter\nx_total 1\n");
    });
    port_ = server_->listen();
    thread_ = std::thread([this] { uv_run(&loop_, UV_RUN_DEFAULT); });
  }
  ~Endpoint() {
    uv_async_send(&stop_);
    thread_.join();
    EXPECT_TRUE(server_->closed());
    server_.reset();
    EXPECT_EQ(uv_loop_close(&loop_), 0);
  }
  std::uint16_t port() const { return port_; }
  int renders() const { return renders_.load(); }

 private:
  uv_loop_t loop_;
  uv_async_t stop_;
  std::unique_ptr<MetricsHttpServer> server_;
  std::uint16_t port_ = 0;
  std::atomic<int> renders_{0};
  std::thread thread_;
};

int connect_to(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Everything until EOF (or `timeout`); "<timeout>" appended when it ran out.
std::string read_all(int fd, std::chrono::milliseconds timeout = 10s) {
  std::string out;
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    const auto left = timeout - (std::chrono::steady_clock::now() - start);
    if (left <= 0ms) return out + "<timeout>";
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left / 1ms) + 1) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return out;
    out.append(buf, static_cast<std::size_t>(n));
  }
}

std::string exchange(std::uint16_t port, const std::string& request) {
  const int fd = connect_to(port);
  if (fd < 0) return "<connect failed>";
  (void)!::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string reply = read_all(fd);
  ::close(fd);
  return reply;
}

std::string status_line(const std::string& reply) {
  return reply.substr(0, reply.find("\r\n"));
}

TEST(MetricsHttpServer, ServesMetricsWithThePrometheusContentType) {
  Endpoint e({});
  const std::string reply = exchange(e.port(), "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(status_line(reply), "HTTP/1.1 200 OK");
  EXPECT_NE(reply.find("\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"),
            std::string::npos);
  EXPECT_NE(reply.find("\r\nContent-Length: 33\r\n"), std::string::npos) << reply;
  EXPECT_TRUE(reply.ends_with("\r\n\r\n# TYPE x_total counter\nx_total 1\n")) << reply;
  // A query string is ignored; HEAD gets the headers only.
  EXPECT_EQ(status_line(exchange(e.port(), "GET /metrics?x=1 HTTP/1.0\r\n\r\n")),
            "HTTP/1.1 200 OK");
  const std::string head = exchange(e.port(), "HEAD /metrics HTTP/1.1\r\n\r\n");
  EXPECT_EQ(status_line(head), "HTTP/1.1 200 OK");
  EXPECT_TRUE(head.ends_with("\r\n\r\n")) << head;
}

TEST(MetricsHttpServer, AnswersOtherPathsWith404AndOtherMethodsWith405) {
  Endpoint e({});
  EXPECT_EQ(status_line(exchange(e.port(), "GET / HTTP/1.1\r\n\r\n")), "HTTP/1.1 404 Not Found");
  EXPECT_EQ(status_line(exchange(e.port(), "GET /metricsx HTTP/1.1\r\n\r\n")),
            "HTTP/1.1 404 Not Found");
  const std::string post =
      exchange(e.port(), "POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
  EXPECT_EQ(status_line(post), "HTTP/1.1 405 Method Not Allowed");
  EXPECT_NE(post.find("\r\nAllow: GET, HEAD\r\n"), std::string::npos);
  EXPECT_EQ(status_line(exchange(e.port(), "garbage\r\n\r\n")), "HTTP/1.1 400 Bad Request");
  EXPECT_EQ(e.renders(), 0);  // none of them rendered the metrics
}

TEST(MetricsHttpServer, RefusesAnOversizedRequestWith431) {
  wheel::server::MetricsHttpOptions o;
  o.max_request = 1024;
  Endpoint e(o);
  const std::string big = "GET /metrics HTTP/1.1\r\nX-Junk: " + std::string(1500, 'a');
  const int fd = connect_to(e.port());
  ASSERT_GE(fd, 0);
  (void)!::send(fd, big.data(), big.size(), MSG_NOSIGNAL);  // no blank line, ever
  const std::string reply = read_all(fd);
  ::close(fd);
  EXPECT_EQ(status_line(reply), "HTTP/1.1 431 Request Header Fields Too Large") << reply;
}

TEST(MetricsHttpServer, CutsOffASlowClientAfterTheReadTimeoutHoweverItDrips) {
  wheel::server::MetricsHttpOptions o;
  o.read_timeout = 500ms;
  Endpoint e(o);
  const int fd = connect_to(e.port());
  ASSERT_GE(fd, 0);
  const auto start = std::chrono::steady_clock::now();
  std::string reply;
  // One byte every 100 ms never completes the head: the deadline runs from accept.
  for (int i = 0; i < 100 && reply.empty(); ++i) {
    (void)!::send(fd, "G", 1, MSG_NOSIGNAL);
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) > 0) reply = read_all(fd);
  }
  ::close(fd);
  EXPECT_EQ(status_line(reply), "HTTP/1.1 408 Request Timeout") << reply;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 8s);
}

// Past max_clients a new client closes the oldest one still sending its head: idle clients
// holding connections cannot deny a scrape.
TEST(MetricsHttpServer, ANewClientBeyondMaxClientsClosesTheOldestIdleOne) {
  wheel::server::MetricsHttpOptions o;
  o.max_clients = 2;
  o.read_timeout = 20s;
  Endpoint e(o);
  const int a = connect_to(e.port());
  const int b = connect_to(e.port());
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  EXPECT_EQ(status_line(exchange(e.port(), "GET /metrics HTTP/1.1\r\n\r\n")), "HTTP/1.1 200 OK");
  EXPECT_EQ(read_all(a, 10s), "") << "the oldest idle client is closed, unanswered";
  ::close(a);
  ::close(b);
}

// Issue 21 item 3: 200 slow clients (a partial head each, never finished) hold connections;
// every one of 20 scrapes made meanwhile still succeeds.
TEST(MetricsHttpServer, ScrapesSucceedWhileTwoHundredSlowClientsHoldConnections) {
  wheel::server::MetricsHttpOptions o;  // defaults: 64 clients, 5 s to send a head
  o.read_timeout = 60s;                 // the slow clients are never timed out here
  Endpoint e(o);
  std::vector<int> slow;
  for (int i = 0; i < 200; ++i) {
    const int fd = connect_to(e.port());
    ASSERT_GE(fd, 0);
    (void)!::send(fd, "GET /metr", 9, MSG_NOSIGNAL);
    slow.push_back(fd);
  }
  int ok = 0;
  for (int i = 0; i < 20; ++i) {
    ok += status_line(exchange(e.port(), "GET /metrics HTTP/1.1\r\n\r\n")) == "HTTP/1.1 200 OK";
    // More slow clients between the scrapes, as an attacker keeps reconnecting.
    for (int j = 0; j < 10; ++j) {
      const int fd = connect_to(e.port());
      if (fd >= 0) (void)!::send(fd, "GET /metr", 9, MSG_NOSIGNAL);
      if (fd >= 0) slow.push_back(fd);
    }
  }
  EXPECT_EQ(ok, 20);
  for (const int fd : slow) ::close(fd);
}

}  // namespace
}  // namespace wheel::server
