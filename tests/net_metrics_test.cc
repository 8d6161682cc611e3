// SPDX-License-Identifier: Apache-2.0
// The Prometheus pieces of wheel::net: the text writer (checked by an independent parser of
// the format's rules, support/prometheus_parser.h), the histogram, the per-worker slot and its
// shared region across fork(), and the HTTP endpoint against broken and hostile scrapers.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "support/prometheus_parser.h"
#include "support/wait_until.h"
#include "wheel/server/metrics_http_server.h"
#include "wheel/server/prometheus_text.h"
#include "wheel/server/server_metrics.h"

namespace wheel::server {
namespace {

using namespace std::chrono_literals;
using wheel::net::CloseReason;
using wheel::testing::parse_exposition;

// ---- the parser itself rejects what the format forbids -----------------------------------

TEST(PrometheusParser, RejectsWhatTheFormatForbids) {
  EXPECT_NO_THROW(parse_exposition("# TYPE a counter\na 1\n"));
  EXPECT_THROW(parse_exposition("a 1\n# TYPE a counter\n"), std::runtime_error);  // TYPE late
  EXPECT_THROW(parse_exposition("1a 1\n"), std::runtime_error);
  EXPECT_THROW(parse_exposition("a{b=\"x\\q\"} 1\n"), std::runtime_error);
  EXPECT_THROW(parse_exposition("a{b=\"x} 1\n"), std::runtime_error);
  EXPECT_THROW(parse_exposition("a 1\nb 1\na 2\n"), std::runtime_error);  // not contiguous
  EXPECT_THROW(parse_exposition("# TYPE h histogram\nh_bucket{le=\"1\"} 2\n"
                                "h_bucket{le=\"+Inf\"} 1\nh_sum 0\nh_count 1\n"),
               std::runtime_error);  // not cumulative
  EXPECT_THROW(parse_exposition("# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 0\n"
                                "h_count 3\n"),
               std::runtime_error);                           // +Inf != count
  EXPECT_THROW(parse_exposition("a 1"), std::runtime_error);  // no final newline
}

// ---- the writer --------------------------------------------------------------------------

TEST(PrometheusText, EscapesLabelValuesAndHelp) {
  EXPECT_EQ(PrometheusText::escape_label_value("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  EXPECT_EQ(PrometheusText::escape_help("a\\b\"c\nd"), "a\\\\b\"c\\nd");
  PrometheusText t;
  t.family("x_total", "counter", "help with \\ and\nnewline");
  t.sample("x_total", {{"path", "C:\\dir \"q\"\n"}}, 3);
  const auto parsed = parse_exposition(t.text());
  EXPECT_EQ(parsed.value("x_total", {{"path", "C:\\dir \"q\"\n"}}), 3);
}

TEST(PrometheusText, OneSampleFamiliesAndOneLabelSeriesCarryTheirTypeAndHelp) {
  PrometheusText t;
  t.counter("a_total", "a help", 7);
  t.gauge("b", "b help", 8);
  t.counter_double("c_seconds_total", "c help", 1.5);
  t.gauge_double("d_seconds", "d help", 0.25);
  t.series("e", "gauge", "e help", "state", {{"ready", 3}, {"buried", 4}});
  EXPECT_EQ(t.text(),
            "# HELP a_total a help\n# TYPE a_total counter\na_total 7\n"
            "# HELP b b help\n# TYPE b gauge\nb 8\n"
            "# HELP c_seconds_total c help\n# TYPE c_seconds_total counter\nc_seconds_total 1.5\n"
            "# HELP d_seconds d help\n# TYPE d_seconds gauge\nd_seconds 0.25\n"
            "# HELP e e help\n# TYPE e gauge\ne{state=\"ready\"} 3\ne{state=\"buried\"} 4\n");
  const auto parsed = parse_exposition(t.text());
  EXPECT_EQ(parsed.families.at("a_total").type, "counter");
  EXPECT_EQ(parsed.families.at("b").type, "gauge");
  EXPECT_EQ(parsed.value("e", {{"state", "buried"}}), 4);
}

TEST(PrometheusText, FormatsFloatsAsTheFormatSpellsThem) {
  EXPECT_EQ(PrometheusText::format_double(0.001), "0.001");
  EXPECT_EQ(PrometheusText::format_double(0.0001), "0.0001");  // not the shorter "1e-04"
  EXPECT_EQ(PrometheusText::format_double(0.00025), "0.00025");
  EXPECT_EQ(PrometheusText::format_double(4.757341755), "4.757341755");
  EXPECT_EQ(PrometheusText::format_double(1e20), "1e+20");
  EXPECT_EQ(PrometheusText::format_double(1), "1");
  EXPECT_EQ(PrometheusText::format_double(INFINITY), "+Inf");
  EXPECT_EQ(PrometheusText::format_double(-INFINITY), "-Inf");
  EXPECT_EQ(PrometheusText::format_double(NAN), "NaN");
}

TEST(MetricsHistogram, CountsEachValueInTheFirstBucketAtOrAboveIt) {
  wheel::server::MetricsHistogram<3> h({0.001, 0.01, 0.1});
  h.observe(0ns);
  h.observe(1ms);  // on the bound: that bucket (le is "less or equal")
  h.observe(1001us);
  h.observe(5s);
  h.observe(-5ms);  // counts as 0
  const auto c = h.read();
  EXPECT_EQ(c.buckets[0], 3u);
  EXPECT_EQ(c.buckets[1], 1u);
  EXPECT_EQ(c.buckets[2], 0u);
  EXPECT_EQ(c.buckets[3], 1u);
  EXPECT_EQ(c.count(), 5u);
  EXPECT_EQ(c.sum, 1'000'000u + 1'001'000u + 5'000'000'000u);
  h.reset();
  EXPECT_EQ(h.read().count(), 0u);
}

TEST(MetricsHistogram, CountsSizesInTheirOwnUnitAndWritesTheirSumUnscaled) {
  wheel::MetricsHistogram<3> h({1, 4, 16}, 1);  // records: bounds and values in one unit
  for (const std::uint64_t v : {0u, 1u, 2u, 4u, 5u, 17u}) h.observe_value(v);
  const auto c = h.read();
  EXPECT_EQ(c.buckets[0], 2u);
  EXPECT_EQ(c.buckets[1], 2u);
  EXPECT_EQ(c.buckets[2], 1u);
  EXPECT_EQ(c.buckets[3], 1u);
  EXPECT_EQ(c.sum, 29u);
  PrometheusText t;
  t.family("x_records", "histogram", "sizes");
  t.histogram("x_records", std::array<double, 3>{1, 4, 16}, c, 1);
  const auto e = parse_exposition(t.text());
  EXPECT_EQ(e.value("x_records_sum"), 29);
  EXPECT_EQ(e.value("x_records_bucket", {{"le", "4"}}), 4);
  EXPECT_EQ(e.value("x_records_count"), 6);
}

TEST(ServerMetrics, RenderedTextFollowsTheFormatAndNamesEveryMetric) {
  // Each plain value and the metric it must come out as.
  struct Plain {
    std::uint64_t ServerMetricsValues::*field;
    std::uint64_t value;
    const char* metric;
  };
  const Plain plain[] = {
      {&ServerMetricsValues::connections_open, 7, "wheel_connections_open"},
      {&ServerMetricsValues::accepted, 20, "wheel_connections_accepted_total"},
      {&ServerMetricsValues::heartbeats_sent, 4, "wheel_heartbeats_sent_total"},
      {&ServerMetricsValues::pings, 5, "wheel_pings_total"},
      {&ServerMetricsValues::delayed_pending, 6, "wheel_delayed_pending"},
      {&ServerMetricsValues::delayed_sent, 8, "wheel_delayed_sent_total"},
      {&ServerMetricsValues::bytes_received, 100, "wheel_bytes_received_total"},
      {&ServerMetricsValues::bytes_sent, 200, "wheel_bytes_sent_total"},
      {&ServerMetricsValues::timer_pending_timeouts, 9, "wheel_timer_pending_timeouts"}};
  ServerMetricsValues v;
  for (const Plain& p : plain) v.*p.field = p.value;
  v.rejected_full = 2;
  v.rejected_emfile = 1;
  v.closed[static_cast<std::size_t>(CloseReason::kReaderIdle)] = 10;
  v.closed[static_cast<std::size_t>(CloseReason::kQuit)] = 3;
  v.idle_close_lateness.buckets[0] = 4;
  v.idle_close_lateness.buckets[3] = 5;
  v.idle_close_lateness.buckets.back() = 1;
  v.idle_close_lateness.sum = 1'500'000'000;
  v.tick_lag.buckets[1] = 2;
  const auto e = parse_exposition(wheel::server::render_server_metrics(v, 3));
  for (const Plain& p : plain) EXPECT_EQ(e.value(p.metric), p.value) << p.metric;
  EXPECT_EQ(e.families.at("wheel_connections_open").type, "gauge");
  EXPECT_EQ(e.value("wheel_connections_rejected_total", {{"reason", "full"}}), 2);
  EXPECT_EQ(e.value("wheel_connections_rejected_total", {{"reason", "emfile"}}), 1);
  EXPECT_EQ(e.families.at("wheel_connections_closed_total").type, "counter");
  for (const char* reason :
       {"reader_idle", "writer_idle", "all_idle", "quit", "peer", "slow_consumer", "line_too_long",
        "error", "shutdown", "worker_lost"}) {
    EXPECT_NO_THROW(e.value("wheel_connections_closed_total", {{"reason", reason}})) << reason;
  }
  EXPECT_EQ(e.value("wheel_connections_closed_total", {{"reason", "reader_idle"}}), 10);
  EXPECT_EQ(e.value("wheel_connections_closed_total", {{"reason", "quit"}}), 3);
  EXPECT_EQ(e.value("wheel_workers"), 3);
  EXPECT_EQ(e.families.at("wheel_idle_close_lateness_seconds").type, "histogram");
  EXPECT_EQ(e.value("wheel_idle_close_lateness_seconds_bucket", {{"le", "0.001"}}), 4);
  EXPECT_EQ(e.value("wheel_idle_close_lateness_seconds_bucket", {{"le", "0.01"}}), 9);
  EXPECT_EQ(e.value("wheel_idle_close_lateness_seconds_bucket", {{"le", "+Inf"}}), 10);
  EXPECT_EQ(e.value("wheel_idle_close_lateness_seconds_count"), 10);
  EXPECT_DOUBLE_EQ(e.value("wheel_idle_close_lateness_seconds_sum"), 1.5);
  EXPECT_EQ(e.value("wheel_timer_tick_lag_seconds_count"), 2);
  for (const auto& [name, family] : e.families) {
    EXPECT_TRUE(family.has_help) << name;
    if (family.type == "counter") {
      EXPECT_TRUE(name.ends_with("_total")) << name;
    }
  }
}

// ---- the shared slots --------------------------------------------------------------------

TEST(ServerMetricsRegion, SlotsAreCacheLineAlignedAndSharedWithAForkedChild) {
  static_assert(alignof(wheel::server::ServerMetricsSlot) == 64);
  ServerMetricsRegion region(3);
  for (std::size_t i = 0; i < region.size(); ++i) {
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(&region.slot(i)) % 64, 0u);
  }
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // a worker: writes only its own slot
    ServerMetricsValues v;
    v.accepted = 41;
    v.connections_open = 2;
    region.slot(1).publish(v);
    region.slot(1).idle_close_lateness.observe(3ms);
    region.slot(1).tick_lag.observe(50us);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  const ServerMetricsValues seen = region.slot(1).read();
  EXPECT_EQ(seen.accepted, 41u);
  EXPECT_EQ(seen.connections_open, 2u);
  EXPECT_EQ(seen.idle_close_lateness.count(), 1u);
  EXPECT_EQ(seen.tick_lag.count(), 1u);
  EXPECT_EQ(region.slot(0).read().accepted, 0u);
  // A dead worker's counters are folded into a total, its gauges are not; the slot restarts.
  ServerMetricsValues total;
  total.add_counters(seen);
  region.slot(1).reset();
  EXPECT_EQ(total.accepted, 41u);
  EXPECT_EQ(total.connections_open, 0u);
  EXPECT_EQ(total.idle_close_lateness.count(), 1u);
  EXPECT_EQ(region.slot(1).read().accepted, 0u);
  ServerMetricsValues live;
  live.add_all(seen);
  EXPECT_EQ(live.connections_open, 2u);
}

// ---- the HTTP endpoint -------------------------------------------------------------------

// How an Endpoint's text comes: from a plain render; from an async one 100 ms later (a count
// read from elsewhere); or never (replies still held are called once the server is gone).
enum class Text { kAtOnce, kLater, kNever };

// A MetricsHttpServer on a loop thread of its own.
class Endpoint {
 public:
  explicit Endpoint(wheel::server::MetricsHttpOptions options, Text text = Text::kAtOnce) {
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
  wheel::server::MetricsHttpOptions o;
  o.read_timeout = 300ms;
  o.max_clients = 1;
  Endpoint e(o, Text::kNever);
  const int waiting = connect_to(e.port());
  ASSERT_GE(waiting, 0);
  const std::string get = "GET /metrics HTTP/1.1\r\n\r\n";
  (void)!::send(waiting, get.data(), get.size(), MSG_NOSIGNAL);
  // A client waiting for its text is being answered: a new one past max_clients does not
  // evict it (the newcomer is closed).
  ASSERT_TRUE(wheel_test::wait_until([&] { return e.renders() > 0; }));
  EXPECT_EQ(exchange(e.port(), "GET /metrics HTTP/1.1\r\n\r\n"), "");
  EXPECT_EQ(status_line(read_all(waiting)), "HTTP/1.1 503 Service Unavailable");
  ::close(waiting);
  // Another scrape, also never answered: its reply is still held when the server goes.
  EXPECT_EQ(status_line(exchange(e.port(), "GET /metrics HTTP/1.1\r\n\r\n")),
            "HTTP/1.1 503 Service Unavailable");
}

}  // namespace
}  // namespace wheel::server
