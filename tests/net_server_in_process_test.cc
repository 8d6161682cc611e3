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

TEST(NetServerInProcess, RunsOnItsThreadAndShutsDownFromAnother) {
  LineServerOptions options;
  options.port = 0;
  options.tick = 5ms;
  options.reader_idle = 200ms;
  options.stats_interval = 0ms;
  LineServer server(options);
  EXPECT_EQ(server.port(), 0) << "before listen()";
  const std::uint16_t port = server.listen();
  ASSERT_NE(port, 0);
  ServerStats final_stats;
  std::thread loop([&] { final_stats = server.run(); });
  EXPECT_EQ(server.port(), port) << "the bound port, read from another thread than the loop's";
  {
    Client c(port);
    c.send("PING\nDELAY 20 soon\n");
    EXPECT_EQ(c.read_line(), "PONG");
    EXPECT_EQ(c.read_line(), "OK");
    EXPECT_EQ(c.read_line(), "DELAYED soon");
    EXPECT_EQ(c.read_line(), "BYE idle");
  }
  Client open(port);
  open.send("DELAY 60000 never\n");
  EXPECT_EQ(open.read_line(), "OK");
  server.shutdown();
  server.shutdown();  // a second request is harmless
  loop.join();
  EXPECT_EQ(open.read_line(), "BYE shutdown");
  EXPECT_EQ(final_stats.accepted, 2u);
  EXPECT_EQ(final_stats.idle_closed, 1u);
  EXPECT_EQ(final_stats.pings, 1u);
  EXPECT_EQ(final_stats.delayed_sent, 1u);
  EXPECT_EQ(final_stats.connections, 0u);
  EXPECT_EQ(final_stats.delayed_pending, 0u);
  server.shutdown();  // after run() returned: a no-op
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
