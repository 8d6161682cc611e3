// SPDX-License-Identifier: Apache-2.0
// wheel-server over loopback, DELAY: replies, limits, cancellation on close.
// The tests run the real wheel-server binary as a child process (a sanitizer report in it
// fails the test through its exit status) unless they say otherwise.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include "net_test_support.h"

namespace wheel::net::testing {
namespace {

TEST(NetServerDelay, RepliesOkAtOnceThenDelayedAfterItsDelay) {
  ServerProcess server(server_args({}));
  Client c(server.port());
  const auto sent = Clock::now();
  c.send("DELAY 300 hello delayed world\n");
  EXPECT_EQ(c.read_line(), "OK");  // before DELAYED, so "now"
  EXPECT_EQ(c.read_line(), "DELAYED hello delayed world");
  const long long elapsed = ms_since(sent);
  EXPECT_GE(elapsed, 300);
  EXPECT_LT(elapsed, 300 + 1000);  // generous: a noisy machine, maybe a sanitizer
  EXPECT_EQ(stats_of(c)["delayed_pending"], 0);
  expect_clean_exit(server);
}

// DELAY 5, a hundred times one after another: no DELAYED line arrives before 5 ms have passed on
// this test's clock since the DELAY was sent (never early; nothing here says how late).
TEST(NetServerDelay, NoDelayedLineArrivesEarly) {
  // The default tick, 1 ms (server_args' 10 ms would hide a deadline up to 10 ms early).
  ServerProcess server({"--port", "0", "--stats-interval", "0"});
  Client c(server.port());
  int early = 0;
  for (int i = 0; i < 100; ++i) {
    const auto sent = Clock::now();
    c.send("DELAY 5 x\n");
    ASSERT_EQ(c.read_line(), "OK");
    ASSERT_EQ(c.read_line(), "DELAYED x");
    if (Clock::now() - sent < std::chrono::milliseconds(5)) ++early;
  }
  EXPECT_EQ(early, 0);
  expect_clean_exit(server);
}

TEST(NetServerDelay, DelaysOutOfRangeOrMalformedAreRejected) {
  ServerProcess server(server_args({}));
  Client c(server.port());
  for (const char* line : {"DELAY 0 x", "DELAY 86400001 x", "DELAY", "DELAY x", "DELAY -5 x",
                           "DELAY 5x", "DELAY 99999999999999999999999 x", "DELAY  5 x"}) {
    c.send(std::string(line) + "\n");
    EXPECT_EQ(c.read_line(), "ERR bad delay") << line;
  }
  c.send("DELAY 86400000 the longest allowed\n");
  EXPECT_EQ(c.read_line(), "OK");
  c.send("DELAY 1\n");  // the text may be empty
  EXPECT_EQ(c.read_line(), "OK");
  EXPECT_EQ(c.read_line(), "DELAYED ");
  expect_clean_exit(server);
}

TEST(NetServerDelay, AThousandPendingPerConnectionAtMost) {
  ServerProcess server(server_args({}));
  Client c(server.port());
  std::string batch;
  for (int i = 0; i < 1001; ++i) batch += "DELAY 60000 m" + std::to_string(i) + "\n";
  c.send(batch);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(c.read_line(), "OK") << i;
  EXPECT_EQ(c.read_line(), "ERR too many delayed messages");
  EXPECT_EQ(stats_of(c)["delayed_pending"], 1000);
  Client other(server.port());  // the limit is per connection
  other.send("DELAY 60000 x\n");
  EXPECT_EQ(other.read_line(), "OK");
  expect_clean_exit(server);
}

// DELAYs that come due out of the order sent are each delivered once, and the count of pending
// ones stays right: after a half-close the connection closes right after the last.
TEST(NetServerDelay, DelaysDueOutOfOrderAreEachDeliveredThenTheClose) {
  ServerProcess server(server_args({}));
  Client c(server.port());
  c.send("DELAY 300 a\nDELAY 100 b\nDELAY 200 c\nDELAY 100 d\n");
  for (int i = 0; i < 4; ++i) ASSERT_EQ(c.read_line(), "OK");
  ASSERT_EQ(::shutdown(c.fd(), SHUT_WR), 0);
  EXPECT_EQ(c.read_line(10s), "DELAYED b");
  EXPECT_EQ(c.read_line(10s), "DELAYED d");
  EXPECT_EQ(c.read_line(10s), "DELAYED c");
  EXPECT_EQ(c.read_line(10s), "DELAYED a");
  EXPECT_EQ(c.read_line(10s), "<eof>");
  expect_clean_exit(server);
}

TEST(NetServerDelay, PendingDelaysAreCancelledWhenTheConnectionCloses) {
  ServerProcess server(server_args({}));
  {
    Client c(server.port());
    std::string batch;
    for (int i = 0; i < 100; ++i) batch += "DELAY " + std::to_string(200 + i) + " x\n";
    c.send(batch);
    for (int i = 0; i < 100; ++i) ASSERT_EQ(c.read_line(), "OK");
    c.reset();  // a FIN alone would be a half-close: the DELAYs would still be owed
  }
  Client observer(server.port());
  const auto start = Clock::now();
  while (stats_of(observer)["delayed_pending"] != 0 && ms_since(start) < 5000) {
    std::this_thread::sleep_for(10ms);
  }
  // A marker due after every one of them: once it arrives the wheel has passed them all.
  observer.send("DELAY 400 marker\n");
  ASSERT_EQ(observer.read_line(), "OK");
  ASSERT_EQ(observer.read_line(10s), "DELAYED marker");
  const nlohmann::json stats = stats_of(observer);
  EXPECT_EQ(stats["delayed_pending"], 0);
  EXPECT_EQ(stats["delayed_sent"], 1) << "only the marker";
  expect_clean_exit(server);
}

}  // namespace
}  // namespace wheel::net::testing
