// SPDX-License-Identifier: Apache-2.0
// Connection's backpressure (wheel/net/connection.h): pause_input() stops reading (with line
// framing the rest of the read is held), notify_output_below() brings one on_output_below() on a
// later turn once the queued output is short, resume_input() hands the held lines over in
// order. TcpServerCounters::max_queued_output shows the most one connection held.
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

constexpr std::size_t kReply = 4096;             // one "big N" reply, "\n" included
constexpr std::size_t kHigh = 256 * 1024;        // the handler pauses at this much queued
constexpr std::size_t kLow = 64 * 1024;          // and resumes at this much
constexpr std::size_t kMaxOutput = 1024 * 1024;  // the slow-consumer bound

// "big N" answers N padded to kReply bytes; other lines are echoed. Past kHigh queued it pauses
// its input until the output is down to kLow. "arm" asks for on_output_below at once (kBytes).
class PausingHandler : public ConnectionHandler {
 public:
  void on_data(Connection& c, std::string_view bytes) override {
    if (bytes.starts_with("arm")) {
      in_call_ = true;
      c.notify_output_below(kMaxOutput);
      in_call_ = false;
      record("armed");
    }
  }
  void on_line(Connection& c, std::string_view line) override {
    if (line == "pause") {
      c.pause_input();
      return record("paused");
    }
    if (line.starts_with("big ")) {
      std::string reply(line.substr(4));
      reply.resize(kReply - 1, '.');
      c.send(reply + "\n");
    } else {
      c.send("LINE " + std::string(line) + "\n");
    }
    if (c.queued_output() >= kHigh) {
      ++pauses_;
      c.pause_input();
      c.notify_output_below(kLow);
    }
  }
  void on_output_below(Connection& c) override {
    record(in_call_ ? "below inside the call" : "below");
    ++resumes_;
    c.resume_input();
  }
  void on_close(Connection&, CloseReason reason) override {
    record(std::string("close ") + to_string(reason));
  }

  int pauses() const { return pauses_; }
  int resumes() const { return resumes_; }
  bool wait_for(const std::string& event) {
    const auto deadline = Clock::now() + 10s;
    while (Clock::now() < deadline) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        for (const std::string& e : events_) {
          if (e == event) return true;
        }
      }
      std::this_thread::sleep_for(5ms);
    }
    return false;
  }
  std::vector<std::string> events() {
    std::lock_guard<std::mutex> lock(mutex_);
    return events_;
  }

 private:
  void record(std::string e) {
    std::lock_guard<std::mutex> lock(mutex_);
    events_.push_back(std::move(e));
  }
  std::atomic<int> pauses_{0}, resumes_{0};
  bool in_call_ = false;
  std::mutex mutex_;
  std::vector<std::string> events_;
};

// A TcpServer on a loop the test owns, run on a thread of its own.
class Served {
 public:
  Served(TcpServerOptions options, ConnectionHandler& handler) {
    EXPECT_EQ(uv_loop_init(&loop_), 0);
    server_ = std::make_unique<TcpServer>(&loop_, std::move(options), handler);
    port_ = server_->listen();
    thread_ = std::thread([this] { uv_run(&loop_, UV_RUN_DEFAULT); });
  }
  ~Served() {
    stop();
    server_.reset();
    EXPECT_EQ(uv_loop_close(&loop_), 0);
  }
  std::uint16_t port() const { return port_; }
  // Shuts the server down; its counters once the loop stopped.
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

TcpServerOptions options(Framing framing = Framing::kLines) {
  TcpServerOptions o;
  o.framing = framing;
  o.max_output = kMaxOutput;
  o.shutdown_grace = 100ms;
  return o;
}

// 5,000 pipelined requests in one write would make 20 MB of replies: the server holds at most
// the mark plus one reply, the client is not closed, the others are answered meanwhile, and
// once it reads, every reply comes, in order.
TEST(NetBackpressure, PipelinedLinesWaitUnreadWhileTheOutputIsOverTheMarkThenAllAreAnswered) {
  PausingHandler handler;
  Served server(options(), handler);
  Client greedy(server.port(), 4096);
  std::string requests;
  for (int i = 0; i < 5000; ++i) requests += "big " + std::to_string(i) + "\n";
  ASSERT_TRUE(greedy.send(requests));  // about 40 KB: the kernel takes it even unread
  EXPECT_EQ(greedy.read_line().substr(0, 2), "0.");
  const auto deadline = Clock::now() + 10s;
  while (handler.pauses() == 0 && Clock::now() < deadline) std::this_thread::sleep_for(5ms);
  EXPECT_GE(handler.pauses(), 1);

  Client other(server.port());
  ASSERT_TRUE(other.send("hello\n"));
  EXPECT_EQ(other.read_line(), "LINE hello");

  for (int i = 1; i < 5000; ++i) {
    const std::string line = greedy.read_line(10s);
    ASSERT_EQ(line.substr(0, line.find('.')), std::to_string(i));
  }
  ASSERT_TRUE(greedy.send("done\n"));
  EXPECT_EQ(greedy.read_line(), "LINE done");
  EXPECT_GE(handler.resumes(), 1);
  const TcpServerCounters counters = server.stop();
  EXPECT_EQ(counters.slow_consumers, 0u);
  EXPECT_LE(counters.max_queued_output, kHigh + kReply);
}

// notify_output_below with the output already short: the call still comes, on a later turn,
// not from inside the handler's own call.
TEST(NetBackpressure, OnOutputBelowComesOnALaterTurnWhenTheOutputIsAlreadyShort) {
  PausingHandler handler;
  Served server(options(Framing::kBytes), handler);
  Client c(server.port());
  ASSERT_TRUE(c.send("arm"));
  EXPECT_TRUE(handler.wait_for("below"));
  const std::vector<std::string> events = handler.events();
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events[0], "armed");
  EXPECT_EQ(events[1], "below");
}

// A paused connection is not read, yet a client that resets it is still noticed.
TEST(NetBackpressure, APausedConnectionIsNotReadButItsResetIsNoticed) {
  PausingHandler handler;
  Served server(options(), handler);
  Client c(server.port());
  ASSERT_TRUE(c.send("pause\nhello\n"));
  EXPECT_TRUE(handler.wait_for("paused"));
  EXPECT_EQ(c.read_line(300ms), "<timeout>");  // "hello" is held, not answered
  c.reset();
  EXPECT_TRUE(handler.wait_for("close peer closed"));
}

}  // namespace
}  // namespace wheel::net::testing
