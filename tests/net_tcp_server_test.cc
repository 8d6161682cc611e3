// SPDX-License-Identifier: Apache-2.0
// TcpServer, Connection and ConnectionHandler (the public server API) in-process: a loop the
// test gives, byte and line framing, close reasons, the reject line and the goodbye, IPv6.
#include <gtest/gtest.h>
#include <uv.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "net_test_support.h"
#include "wheel/net/tcp_server.h"

namespace wheel::net::testing {
namespace {

// Echoes lines (or bytes) upper-cased, remembers what happened.
class RecordingHandler : public ConnectionHandler {
 public:
  void on_open(Connection& c) override {
    c.set_context(new std::string("ctx"));
    record("open " + std::string(c.peer().rfind("127.0.0.1:", 0) == 0 ? "v4" : "?"));
  }
  void on_data(Connection& c, std::string_view bytes) override {
    c.send("DATA " + std::string(bytes) + "\n");
  }
  void on_line(Connection& c, std::string_view line) override {
    if (line == "quit") return c.close_with("bye\n");
    if (line == "flood") {
      for (int i = 0; i < 10'000 && !c.closing(); ++i) c.send(std::string(1000, 'x') + "\n");
      record("flooded");
      return;
    }
    c.send("LINE " + std::string(line) + "\n");
  }
  void on_close(Connection& c, CloseReason reason) override {
    delete static_cast<std::string*>(c.context());
    c.set_context(nullptr);
    record(std::string("close ") + to_string(reason));
  }
  std::string_view reject_line() override { return "full\n"; }
  std::string_view goodbye() override { return "goodbye\n"; }

  std::vector<std::string> events() {
    std::lock_guard<std::mutex> lock(mutex_);
    return events_;
  }
  bool wait_for(const std::string& event) {
    const auto deadline = Clock::now() + 10s;
    while (Clock::now() < deadline) {
      for (const std::string& e : events()) {
        if (e == event) return true;
      }
      std::this_thread::sleep_for(5ms);
    }
    return false;
  }

 private:
  void record(std::string e) {
    std::lock_guard<std::mutex> lock(mutex_);
    events_.push_back(std::move(e));
  }
  std::mutex mutex_;
  std::vector<std::string> events_;
};

// A TcpServer on a loop the test owns, run on a thread of its own.
class OnGivenLoop {
 public:
  OnGivenLoop(TcpServerOptions options, ConnectionHandler& handler) {
    EXPECT_EQ(uv_loop_init(&loop_), 0);
    server_ = std::make_unique<TcpServer>(&loop_, std::move(options), handler);
    port_ = server_->listen();
    thread_ = std::thread([this] { uv_run(&loop_, UV_RUN_DEFAULT); });
  }
  ~OnGivenLoop() {
    server_->shutdown();
    if (thread_.joinable()) thread_.join();  // uv_run returns once the server's handles closed
    EXPECT_TRUE(server_->stopped());
    server_.reset();
    EXPECT_EQ(uv_loop_close(&loop_), 0);
  }
  std::uint16_t port() const { return port_; }
  // Shuts the server down and returns its counters once the loop stopped.
  TcpServerCounters stop() {
    server_->shutdown();
    if (thread_.joinable()) thread_.join();
    return server_->counters();
  }

 private:
  uv_loop_t loop_;
  std::unique_ptr<TcpServer> server_;
  std::uint16_t port_ = 0;
  std::thread thread_;
};

TEST(TcpServer, LinesOnAGivenLoopWithContextAndCloseReasons) {
  RecordingHandler handler;
  TcpServerOptions options;
  options.max_line = 8;
  std::optional<Client> d;
  {
    OnGivenLoop server(options, handler);
    Client a(server.port());
    a.send("hello\r\nquit\n");
    EXPECT_EQ(a.read_line(), "LINE hello");
    EXPECT_EQ(a.read_line(), "bye");
    EXPECT_EQ(a.read_line(), "<eof>");
    EXPECT_TRUE(handler.wait_for("close local"));

    Client b(server.port());
    b.send("123456789\n");
    EXPECT_EQ(b.read_line(), "<eof>") << "the default on_line_too_long closes";
    EXPECT_TRUE(handler.wait_for("close line too long"));

    Client c(server.port());
    c.send("x\n");
    EXPECT_EQ(c.read_line(), "LINE x");
    c.close();
    EXPECT_TRUE(handler.wait_for("close peer closed"));

    d.emplace(server.port());
    d->send("y\n");
    EXPECT_EQ(d->read_line(), "LINE y");
  }  // shutdown: d gets the goodbye
  EXPECT_EQ(d->read_line(), "goodbye");
  EXPECT_TRUE(handler.wait_for("close shutdown"));
  EXPECT_TRUE(handler.wait_for("open v4"));
}

// Reads and writes on a watched connection only store times: the timer sees no traffic.
TEST(TcpServer, TrafficOnAWatchedConnectionPerformsZeroTimerOperations) {
  RecordingHandler handler;
  TcpServerOptions options;
  options.idle = IdleTimes{1h, 1h, 1h};
  uv_loop_t loop;
  ASSERT_EQ(uv_loop_init(&loop), 0);
  {
    TcpServer server(&loop, options, handler);
    const std::uint16_t port = server.listen();
    std::thread thread([&] { uv_run(&loop, UV_RUN_DEFAULT); });
    Client a(port);
    a.send("first\n");
    EXPECT_EQ(a.read_line(), "LINE first");  // watched: three timeouts armed
    const std::uint64_t scheduled = server.timer().timeouts_scheduled();
    const std::uint64_t cancels = server.timer().cancel_calls();
    EXPECT_EQ(scheduled, 3u);
    for (int i = 0; i < 500; ++i) {
      a.send("x\n");
      EXPECT_EQ(a.read_line(), "LINE x");
    }
    EXPECT_EQ(server.timer().timeouts_scheduled(), scheduled);
    EXPECT_EQ(server.timer().cancel_calls(), cancels);
    server.shutdown();
    thread.join();
  }
  EXPECT_EQ(uv_loop_close(&loop), 0);
}

// The replies to one read go out in one send(2), and the counters say so.
TEST(TcpServer, RepliesToOneReadGoOutInOneWriteAndAreCounted) {
  RecordingHandler handler;
  OnGivenLoop server({}, handler);
  {
    Client a(server.port());
    a.send("one\ntwo\n");
    EXPECT_EQ(a.read_line(), "LINE one");
    EXPECT_EQ(a.read_line(), "LINE two");
    a.send("three\n");
    EXPECT_EQ(a.read_line(), "LINE three");
  }
  ASSERT_TRUE(handler.wait_for("close peer closed"));
  const TcpServerCounters c = server.stop();
  EXPECT_EQ(c.bytes_in, 14u);
  EXPECT_EQ(c.bytes_out, 29u);
  EXPECT_EQ(c.writes, 2u);
}

// "later N" schedules a timeout that sends N lines: what the tasks of one turn send goes out in
// one send(2) per connection, in order.
class LaterHandler : public ConnectionHandler {
 public:
  TcpServer* server = nullptr;
  void on_line(Connection& c, std::string_view line) override {
    const int n = std::stoi(std::string(line.substr(6)));
    server->timer().new_timeout(
        [this, id = c.id(), n] {
          Connection* conn = server->find(id);
          if (conn == nullptr) return;
          for (int i = 0; i < n; ++i) conn->send("T" + std::to_string(i) + "\n");
        },
        50ms);
    c.send("OK\n");
  }
  void on_close(Connection&, CloseReason) override { closed = true; }
  std::atomic<bool> closed{false};
};

TEST(TcpServer, WhatOneTimerTurnSendsGoesOutInOneWritePerConnection) {
  LaterHandler handler;
  uv_loop_t loop;
  ASSERT_EQ(uv_loop_init(&loop), 0);
  {
    TcpServer server(&loop, {}, handler);
    handler.server = &server;
    const std::uint16_t port = server.listen();
    std::thread thread([&] { uv_run(&loop, UV_RUN_DEFAULT); });
    Client a(port);
    a.send("later 5\n");
    EXPECT_EQ(a.read_line(), "OK");
    for (int i = 0; i < 5; ++i) EXPECT_EQ(a.read_line(), "T" + std::to_string(i));
    a.close();
    const auto deadline = Clock::now() + 10s;
    while (!handler.closed && Clock::now() < deadline) std::this_thread::sleep_for(5ms);
    server.shutdown();
    thread.join();
    // The OK; then the five lines of the timer's turn.
    EXPECT_EQ(server.counters().writes, 2u);
    EXPECT_EQ(server.counters().bytes_out, 3u + 5u * 3u);
  }
  EXPECT_EQ(uv_loop_close(&loop), 0);
}

TEST(TcpServer, BytesFramingHandsOverWhatWasRead) {
  RecordingHandler handler;
  TcpServerOptions options;
  options.framing = Framing::kBytes;
  OnGivenLoop server(options, handler);
  Client a(server.port());
  a.send("no newline needed");
  EXPECT_EQ(a.read_line(), "DATA no newline needed");
}

TEST(TcpServer, ExtraClientsGetTheRejectLineAndShutdownTheGoodbye) {
  RecordingHandler handler;
  TcpServerOptions options;
  options.max_connections = 1;
  std::optional<Client> first;
  {
    OnGivenLoop server(options, handler);
    first.emplace(server.port());
    first->send("a\n");
    EXPECT_EQ(first->read_line(), "LINE a");
    Client extra(server.port());
    EXPECT_EQ(extra.read_line(), "full");
    EXPECT_EQ(extra.read_line(), "<eof>");
  }
  EXPECT_EQ(first->read_line(), "goodbye");
  EXPECT_EQ(first->read_line(), "<eof>");
}

TEST(TcpServer, AClientThatDoesNotReadIsClosedAsASlowConsumer) {
  RecordingHandler handler;
  TcpServerOptions options;
  options.max_output = 64 * 1024;
  OnGivenLoop server(options, handler);
  Client a(server.port(), 4096);
  a.send("flood\n");  // 10 MB of replies, never read
  EXPECT_TRUE(handler.wait_for("close slow consumer"));
}

// Reads the flood's lines; returns how many came before `last` (set to the first other line).
int count_flood(Client& c, std::string& last) {
  int lines = 0;
  for (int i = 0; i <= 10'001; ++i) {  // bounded: the flood, then one more line
    last = c.read_line(30s);
    if (last != std::string(1000, 'x')) break;
    ++lines;
  }
  return lines;
}

// shutdown_grace takes effect: a client that reads its queued output only after the shutdown
// began still gets all of it and the goodbye; run() waits for that.
TEST(TcpServer, ShutdownGraceLetsAClientTakeItsQueuedOutputAndTheGoodbye) {
  RecordingHandler handler;
  TcpServerOptions options;
  options.max_output = std::size_t{64} << 20;
  options.shutdown_grace = 5s;
  TcpServer server(options, handler);
  const std::uint16_t port = server.listen();
  std::thread loop([&] { server.run(); });
  Client a(port, 4096);
  a.send("flood\n");  // 10 MB of replies, most of them queued: the client does not read yet
  ASSERT_TRUE(handler.wait_for("flooded"));
  server.shutdown();
  ASSERT_TRUE(handler.wait_for("close shutdown"));
  std::string last;
  EXPECT_EQ(count_flood(a, last), 10'000);
  EXPECT_EQ(last, "goodbye");
  EXPECT_EQ(a.read_line(), "<eof>");
  loop.join();
}

// close_with() keeps its word outside a shutdown too: everything queued, then the last words.
TEST(TcpServer, CloseWithWritesEverythingQueuedBeforeTheLastWords) {
  RecordingHandler handler;
  TcpServerOptions options;
  options.max_output = std::size_t{64} << 20;
  OnGivenLoop server(options, handler);
  Client a(server.port(), 4096);
  a.send("flood\nquit\n");
  ASSERT_TRUE(handler.wait_for("close local"));
  std::string last;
  EXPECT_EQ(count_flood(a, last), 10'000);
  EXPECT_EQ(last, "bye");
  EXPECT_EQ(a.read_line(), "<eof>");
}

// End of input (the client's SHUT_WR) is not an abort: the default handler closes after
// writing every reply, as on_close(kPeerClosed).
TEST(TcpServer, AHalfClosedClientGetsItsRepliesThenTheClose) {
  RecordingHandler handler;
  OnGivenLoop server(TcpServerOptions{}, handler);
  Client a(server.port());
  a.send("one\ntwo\n");
  ASSERT_EQ(::shutdown(a.fd(), SHUT_WR), 0);
  EXPECT_EQ(a.read_line(), "LINE one");
  EXPECT_EQ(a.read_line(), "LINE two");
  EXPECT_EQ(a.read_line(), "<eof>");
  EXPECT_TRUE(handler.wait_for("close peer closed"));
}

TEST(TcpServer, ListensOnIpv6Loopback) {
  RecordingHandler handler;
  TcpServerOptions options;
  options.host = "::1";
  OnGivenLoop server(options, handler);
  const int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in6 addr{};
  addr.sin6_family = AF_INET6;
  addr.sin6_port = htons(server.port());
  addr.sin6_addr = in6addr_loopback;
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::send(fd, "v6\n", 3, MSG_NOSIGNAL), 3);
  char buf[64] = {};
  pollfd p{fd, POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 10'000), 1);
  const ssize_t n = ::recv(fd, buf, sizeof(buf) - 1, 0);
  EXPECT_EQ(std::string(buf, n > 0 ? static_cast<std::size_t>(n) : 0), "LINE v6\n");
  ::close(fd);
}

// port(): 0 before listen(), then the port listen() bound (options.port 0: a free one), the
// same when read from another thread.
TEST(TcpServer, PortIsZeroBeforeListenThenTheBoundOneFromAnyThread) {
  RecordingHandler handler;
  uv_loop_t loop;
  ASSERT_EQ(uv_loop_init(&loop), 0);
  {
    TcpServer server(&loop, TcpServerOptions{}, handler);
    EXPECT_EQ(server.port(), 0);
    const std::uint16_t port = server.listen();
    EXPECT_NE(port, 0);
    std::uint16_t seen = 0;
    std::thread([&] { seen = server.port(); }).join();
    EXPECT_EQ(seen, port);
    server.shutdown();
    uv_run(&loop, UV_RUN_DEFAULT);  // returns once the shutdown closed every handle
    EXPECT_TRUE(server.stopped());
  }
  EXPECT_EQ(uv_loop_close(&loop), 0);
}

TEST(TcpServer, InvalidOptionsThrow) {
  RecordingHandler handler;
  TcpServerOptions options;
  options.max_output = 0;
  EXPECT_THROW(TcpServer(options, handler), std::invalid_argument);
  options = TcpServerOptions{};
  options.timer.ticks_per_wheel = 0;
  EXPECT_THROW(TcpServer(options, handler), std::invalid_argument);
  options = TcpServerOptions{};
  options.host = "no-such-host.invalid";
  TcpServer server(options, handler);
  EXPECT_THROW(server.listen(), std::invalid_argument);
}

}  // namespace
}  // namespace wheel::net::testing
