// SPDX-License-Identifier: Apache-2.0
// wheel-server over loopback, wheel::server::LineServer run in-process on its own thread.
// The tests run the real wheel-server binary as a child process (a sanitizer report in it
// fails the test through its exit status) unless they say otherwise.
#include <gtest/gtest.h>

#include <thread>

#include "net_test_support.h"
#include "wheel/server/line_server.h"

namespace wheel::net::testing {

using wheel::server::LineServer;
using wheel::server::LineServerOptions;
using wheel::server::ServerStats;
namespace {

LineServerOptions options_with_reader_idle(std::chrono::milliseconds reader_idle) {
  LineServerOptions options;
  options.port = 0;
  options.tick = 5ms;
  options.reader_idle = reader_idle;
  options.stats_interval = 0ms;
  return options;
}

// A LineServer run on a thread of its own; stop() shuts it down from this thread and returns
// the stats run() returned.
class ServerOnThread {
 public:
  explicit ServerOnThread(const LineServerOptions& options) : server_(options) {
    EXPECT_EQ(server_.port(), 0) << "before listen()";
    port_ = server_.listen();
    EXPECT_NE(port_, 0);
    loop_ = std::thread([this] { final_stats_ = server_.run(); });
    EXPECT_EQ(server_.port(), port_) << "the bound port, read from another thread than the loop's";
  }
  ~ServerOnThread() { stop(); }
  std::uint16_t port() const { return port_; }
  ServerStats stop() {
    server_.shutdown();
    server_.shutdown();  // a second request is harmless
    if (loop_.joinable()) loop_.join();
    server_.shutdown();  // after run() returned: a no-op
    return final_stats_;
  }

 private:
  LineServer server_;
  std::uint16_t port_ = 0;
  ServerStats final_stats_;
  std::thread loop_;
};

TEST(NetServerInProcess, RunsOnItsThreadAndClosesAnIdleClient) {
  ServerOnThread server(options_with_reader_idle(200ms));
  {
    Client c(server.port());
    c.send("PING\nDELAY 20 soon\n");
    EXPECT_EQ(c.read_line(), "PONG");
    EXPECT_EQ(c.read_line(), "OK");
    EXPECT_EQ(c.read_line(), "DELAYED soon");
    EXPECT_EQ(c.read_line(), "BYE idle");
    EXPECT_EQ(c.read_line(), "<eof>");
  }
  const ServerStats final_stats = server.stop();
  EXPECT_EQ(final_stats.accepted, 1u);
  EXPECT_EQ(final_stats.idle_closed, 1u);
  EXPECT_EQ(final_stats.pings, 1u);
  EXPECT_EQ(final_stats.delayed_sent, 1u);
  EXPECT_EQ(final_stats.connections, 0u);
}

TEST(NetServerInProcess, ShutdownFromAnotherThreadSaysByeAndDropsPendingDelays) {
  // No reader idle: with one, a test thread stalled for its length between the OK and the
  // shutdown would see "BYE idle" instead.
  ServerOnThread server(options_with_reader_idle(0ms));
  Client open(server.port());
  open.send("DELAY 60000 never\n");
  EXPECT_EQ(open.read_line(), "OK");
  const ServerStats final_stats = server.stop();
  EXPECT_EQ(open.read_line(), "BYE shutdown");
  EXPECT_EQ(final_stats.accepted, 1u);
  EXPECT_EQ(final_stats.idle_closed, 0u);
  EXPECT_EQ(final_stats.connections, 0u);
  EXPECT_EQ(final_stats.delayed_sent, 0u);
  EXPECT_EQ(final_stats.delayed_pending, 0u);
}

// 20,000 STATS in one write would queue about 10 MB of replies, far past max_output (64 KiB)
// and what the kernel buffers for a client that does not read:
// the rest of the read waits unread once half of it is queued, so the client is served, not
// closed as a slow consumer, and the others are answered meanwhile.
TEST(NetServerInProcess, PipelinedStatsWaitUnreadInsteadOfPilingUpReplies) {
  LineServerOptions options = options_with_reader_idle(0ms);
  options.max_output = 64 * 1024;
  ServerOnThread server(options);
  Client greedy(server.port(), 4096);
  std::string requests;
  for (int i = 0; i < 20'000; ++i) requests += "STATS\n";
  ASSERT_TRUE(greedy.send(requests));
  std::string first = greedy.read_line();
  ASSERT_EQ(first.rfind("STATS {", 0), 0u) << first;
  Client other(server.port());
  ASSERT_TRUE(other.send("PING\n"));
  EXPECT_EQ(other.read_line(), "PONG");
  for (int i = 1; i < 20'000; ++i) {
    const std::string line = greedy.read_line(10s);
    ASSERT_EQ(line.rfind("STATS {", 0), 0u) << "reply " << i << ": " << line;
  }
  const ServerStats final_stats = server.stop();
  EXPECT_EQ(final_stats.slow_consumers, 0u);
  EXPECT_LE(final_stats.max_queued_output, options.max_output / 2 + 2 * (first.size() + 1));
}

TEST(NetServerInProcess, InvalidOptionsThrow) {
  LineServerOptions options;
  options.tick = 0ms;
  EXPECT_THROW(LineServer{options}, std::invalid_argument);
  options = LineServerOptions{};
  options.max_line = 0;
  EXPECT_THROW(LineServer{options}, std::invalid_argument);
}

}  // namespace
}  // namespace wheel::net::testing
