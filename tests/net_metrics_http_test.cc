// SPDX-License-Identifier: Apache-2.0
// wheel::server's MetricsHttpServer (GET /metrics) on a loop thread of its own, against broken
// and hostile scrapers: wrong paths and methods, oversized requests, slow and idle clients; and
// an asynchronous render (its text later, or never: 503).
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
#include <utility>
#include <vector>

#include "support/wait_until.h"
#include "wheel/server/metrics_http_server.h"

namespace wheel::server {
namespace {

using namespace std::chrono_literals;

// How an Endpoint's text comes: from a plain render; from an async one 100 ms later (a count
// read from elsewhere); or never (replies still held are called once the server is gone).
enum class Text { kAtOnce, kLater, kNever };

// A MetricsHttpServer on a loop thread of its own.
class Endpoint {
 public:
  explicit Endpoint(wheel::server::MetricsHttpOptions options, Text text = Text::kAtOnce,
                    MetricsHttpServer::Handler handler = {}) {
    uv_loop_init(&loop_);
    uv_async_init(&loop_, &stop_, [](uv_async_t* a) {
      auto* self = static_cast<Endpoint*>(a->data);
      self->server_->close();
      uv_close(reinterpret_cast<uv_handle_t*>(&self->stop_), nullptr);
      uv_close(reinterpret_cast<uv_handle_t*>(&self->later_), nullptr);
    });
    stop_.data = this;
    uv_timer_init(&loop_, &later_);
    later_.data = this;
    if (text == Text::kAtOnce) {
      server_ = std::make_unique<MetricsHttpServer>(&loop_, options, [this] {
        ++renders_;
        return std::string(kText);
      });
    } else {
      server_ = std::make_unique<MetricsHttpServer>(
          &loop_, options, [this, text](MetricsHttpServer::Reply reply) {
            ++renders_;
            held_.push_back(std::move(reply));
            if (text == Text::kNever) return;
            uv_timer_start(
                &later_,
                [](uv_timer_t* t) {
                  auto* self = static_cast<Endpoint*>(t->data);
                  for (auto& r : std::exchange(self->held_, {})) r(kText);
                },
                100, 0);
          });
    }
    if (handler) server_->set_handler(std::move(handler));
    port_ = server_->listen();
    thread_ = std::thread([this] { uv_run(&loop_, UV_RUN_DEFAULT); });
  }
  ~Endpoint() {
    uv_async_send(&stop_);
    thread_.join();
    EXPECT_TRUE(server_->closed());
    server_.reset();
    for (auto& r : held_) r(kText);  // the server is gone: dropped (ASan: no use after free)
    EXPECT_EQ(uv_loop_close(&loop_), 0);
  }
  static constexpr const char* kText = "# TYPE x_total counter\nx_total 1\n";
  std::uint16_t port() const { return port_; }
  int renders() const { return renders_.load(); }

 private:
  uv_loop_t loop_;
  uv_async_t stop_;
  uv_timer_t later_;
  std::vector<MetricsHttpServer::Reply> held_;  // loop thread (then the destructor)
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

// A handler that answers with what it was given: method, path, query, one header, body.
MetricsHttpServer::Handler echo() {
  return [](const HttpRequest& r, MetricsHttpServer::Respond respond) {
    HttpResponse out;
    out.status = 201;
    out.body = r.method + " " + r.path + " ?" + r.query +
               " x=" + std::string(r.header("x-thing").value_or("-")) + " body=" + r.body;
    respond(std::move(out));
  };
}

TEST(MetricsHttpServer, RoutesEveryOtherRequestToTheHandlerWithItsBody) {
  wheel::server::MetricsHttpOptions o;
  o.max_body = 64;
  Endpoint e(o, Text::kAtOnce, echo());
  std::string reply = exchange(
      e.port(), "POST /api/a%20b?q=1 HTTP/1.1\r\nX-Thing:  yes \r\nContent-Length: 5\r\n\r\nhello");
  EXPECT_EQ(status_line(reply), "HTTP/1.1 201 Created") << reply;
  EXPECT_TRUE(reply.ends_with("POST /api/a b ?q=1 x=yes body=hello")) << reply;
  // A body that comes in a later read than its head is waited for.
  const int fd = connect_to(e.port());
  const std::string head = "POST /x HTTP/1.1\r\nContent-Length: 3\r\n\r\n";
  (void)!::send(fd, head.data(), head.size(), MSG_NOSIGNAL);
  std::this_thread::sleep_for(50ms);
  (void)!::send(fd, "abc", 3, MSG_NOSIGNAL);
  reply = read_all(fd);
  ::close(fd);
  EXPECT_TRUE(reply.ends_with("body=abc")) << reply;
  // /metrics stays the render's, the handler never sees it.
  EXPECT_TRUE(exchange(e.port(), "GET /metrics HTTP/1.1\r\n\r\n").ends_with("x_total 1\n"));
  EXPECT_EQ(e.renders(), 1);
}

TEST(MetricsHttpServer, ABodyOverMaxBodyIs413AndAChunkedOneIs400) {
  wheel::server::MetricsHttpOptions o;
  o.max_body = 4;
  Endpoint e(o, Text::kAtOnce, echo());
  EXPECT_EQ(status_line(exchange(e.port(), "POST /x HTTP/1.1\r\nContent-Length: 5\r\n\r\n12345")),
            "HTTP/1.1 413 Content Too Large");
  EXPECT_EQ(status_line(exchange(e.port(), "POST /x HTTP/1.1\r\nContent-Length: 4\r\n\r\n1234")),
            "HTTP/1.1 201 Created");
  EXPECT_EQ(status_line(exchange(
                e.port(), "POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")),
            "HTTP/1.1 400 Bad Request");
  EXPECT_EQ(status_line(exchange(e.port(), "GET /x%zz HTTP/1.1\r\n\r\n")),
            "HTTP/1.1 400 Bad Request");
}

TEST(MetricsHttpServer, ConsoleRequestsWaitingForTheirAnswerCannotStarveAScrape) {
  wheel::server::MetricsHttpOptions o;
  o.max_clients = 4;
  auto routed = std::make_shared<std::atomic<int>>(0);
  auto held = std::make_shared<std::vector<MetricsHttpServer::Respond>>();  // never answered
  Endpoint e(o, Text::kAtOnce, [routed, held](const HttpRequest&, MetricsHttpServer::Respond r) {
    held->push_back(std::move(r));
    ++*routed;
  });
  std::vector<int> waiting;
  for (int i = 0; i < 4; ++i) {
    waiting.push_back(connect_to(e.port()));
    const std::string get = "GET /api/overview HTTP/1.1\r\n\r\n";
    (void)!::send(waiting.back(), get.data(), get.size(), MSG_NOSIGNAL);
  }
  ASSERT_TRUE(wheel_test::wait_until([&] { return routed->load() == 4; }, 10s));
  EXPECT_TRUE(exchange(e.port(), "GET /metrics HTTP/1.1\r\n\r\n").ends_with("x_total 1\n"));
  // The oldest console request made room: 503, at once.
  EXPECT_EQ(status_line(read_all(waiting.front(), 5s)), "HTTP/1.1 503 Service Unavailable");
  for (const int fd : waiting) ::close(fd);
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

// An asynchronous render: the scrape waits for its text; one that never comes ends in 503 after
// read_timeout; and a reply for a server already destroyed is dropped (the destructor above).
TEST(MetricsHttpServer, AnAsyncRenderAnswersWhenItsTextComesOr503AfterTheTimeout) {
  {
    Endpoint e({}, Text::kLater);
    const std::string reply = exchange(e.port(), "GET /metrics HTTP/1.1\r\n\r\n");
    EXPECT_EQ(status_line(reply), "HTTP/1.1 200 OK");
    EXPECT_TRUE(reply.ends_with(std::string("\r\n\r\n") + Endpoint::kText)) << reply;
    const std::string head = exchange(e.port(), "HEAD /metrics HTTP/1.1\r\n\r\n");
    EXPECT_EQ(status_line(head), "HTTP/1.1 200 OK");
    EXPECT_TRUE(head.ends_with("\r\n\r\n")) << head;
  }
  const std::string get = "GET /metrics HTTP/1.1\r\n\r\n";
  wheel::server::MetricsHttpOptions o;
  o.max_clients = 1;
  {
    // A client waiting for its text is being answered: a new one past max_clients does not
    // evict it (the newcomer is closed). The long timeout keeps it waiting however late this
    // thread comes to the newcomer.
    o.read_timeout = 60s;
    Endpoint e(o, Text::kNever);
    const int waiting = connect_to(e.port());
    ASSERT_GE(waiting, 0);
    (void)!::send(waiting, get.data(), get.size(), MSG_NOSIGNAL);
    ASSERT_TRUE(wheel_test::wait_until([&] { return e.renders() > 0; }));
    EXPECT_EQ(exchange(e.port(), get), "");
    ::close(waiting);
  }
  o.read_timeout = 300ms;
  Endpoint e(o, Text::kNever);
  const int waiting = connect_to(e.port());
  ASSERT_GE(waiting, 0);
  (void)!::send(waiting, get.data(), get.size(), MSG_NOSIGNAL);
  EXPECT_EQ(status_line(read_all(waiting)), "HTTP/1.1 503 Service Unavailable");
  ::close(waiting);
  // Another scrape, also never answered: its reply is still held when the server goes.
  EXPECT_EQ(status_line(exchange(e.port(), "GET /metrics HTTP/1.1\r\n\r\n")),
            "HTTP/1.1 503 Service Unavailable");
}

}  // namespace
}  // namespace wheel::server
