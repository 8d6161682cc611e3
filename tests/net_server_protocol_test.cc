// SPDX-License-Identifier: Apache-2.0
// wheel-server over loopback, the line protocol: commands, framing, bad input.
// The tests run the real wheel-server binary as a child process (a sanitizer report in it
// fails the test through its exit status) unless they say otherwise.
#include <gtest/gtest.h>

#include <random>

#include "net_test_support.h"

namespace wheel::net::testing {
namespace {

TEST(NetServerProtocol, PingGetsPongAndCarriageReturnIsStripped) {
  ServerProcess server(server_args({}));
  Client c(server.port());
  c.send("PING\n");
  EXPECT_EQ(c.read_line(), "PONG");
  c.send("PING\r\n");
  EXPECT_EQ(c.read_line(), "PONG");
  expect_clean_exit(server);
}

TEST(NetServerProtocol, PongAndEmptyLinesGetNoReply) {
  ServerProcess server(server_args({}));
  Client c(server.port());
  c.send("PONG\n\n\r\nPING\n");  // only the PING answers
  EXPECT_EQ(c.read_line(), "PONG");
  EXPECT_EQ(c.read_line(200ms), "<timeout>");
  expect_clean_exit(server);
}

TEST(NetServerProtocol, ManyCommandsInOneSegmentAreAllAnswered) {
  ServerProcess server(server_args({}));
  Client c(server.port());
  std::string batch;
  for (int i = 0; i < 500; ++i) batch += "PING\n";
  c.send(batch);
  for (int i = 0; i < 500; ++i) ASSERT_EQ(c.read_line(), "PONG") << i;
  expect_clean_exit(server);
}

TEST(NetServerProtocol, LineSplitAcrossReadsIsJoined) {
  ServerProcess server(server_args({}));
  Client c(server.port());
  ServerReadWatcher watcher(server.port());
  // Each piece is read by the server before the next is sent: four reads, never coalesced.
  c.send("PI");
  ASSERT_TRUE(watcher.wait_for(2));
  c.send("N");
  ASSERT_TRUE(watcher.wait_for(3));
  c.send("G\r");
  ASSERT_TRUE(watcher.wait_for(5));
  c.send("\nPING\n");
  EXPECT_EQ(c.read_line(), "PONG");
  EXPECT_EQ(c.read_line(), "PONG");
  expect_clean_exit(server);
}

TEST(NetServerProtocol, StatsReportsThisWorkersCountersAsJson) {
  ServerProcess server(server_args({}));
  Client c(server.port());
  c.send("PING\nPING\n");
  EXPECT_EQ(c.read_line(), "PONG");
  EXPECT_EQ(c.read_line(), "PONG");
  const nlohmann::json stats = stats_of(c);
  EXPECT_EQ(stats["worker"], 0);
  EXPECT_EQ(stats["connections"], 1);
  EXPECT_EQ(stats["accepted"], 1);
  EXPECT_EQ(stats["idle_closed"], 0);
  EXPECT_EQ(stats["pings"], 2);
  EXPECT_EQ(stats["delayed_pending"], 0);
  expect_clean_exit(server);
}

TEST(NetServerProtocol, QuitSaysByeAndCloses) {
  ServerProcess server(server_args({}));
  Client c(server.port());
  c.send("QUIT\n");
  EXPECT_EQ(c.read_line(), "BYE");
  EXPECT_EQ(c.read_line(), "<eof>");
  expect_clean_exit(server);
}

TEST(NetServerProtocol, UnknownCommandGetsErrAndTheConnectionStays) {
  ServerProcess server(server_args({}));
  Client c(server.port());
  c.send("HELLO\nping\nPING \n");
  EXPECT_EQ(c.read_line(), "ERR unknown command");
  EXPECT_EQ(c.read_line(), "ERR unknown command");
  EXPECT_EQ(c.read_line(), "ERR unknown command");
  c.send("PING\n");
  EXPECT_EQ(c.read_line(), "PONG");
  expect_clean_exit(server);
}

TEST(NetServerProtocol, BinaryGarbageAndNulBytesNeverCrashOrStall) {
  ServerProcess server(server_args({"--max-line", "256"}));
  std::mt19937 random(42);
  for (int round = 0; round < 20; ++round) {
    Client c(server.port());
    std::string garbage(1 + random() % 2000, '\0');
    for (char& ch : garbage) ch = static_cast<char>(random());
    c.send(garbage);
    if (round % 2 == 0) c.reset();  // and resets with unread replies
  }
  Client c(server.port());
  c.send(std::string("\0\0\x01\xff\n", 5));
  EXPECT_EQ(c.read_line(), "ERR unknown command");
  c.send("PING\n");
  EXPECT_EQ(c.read_line(), "PONG");
  expect_clean_exit(server);
}

TEST(NetServerProtocol, ResetWhileRepliesAreQueuedIsHarmless) {
  ServerProcess server(server_args({}));
  for (int i = 0; i < 20; ++i) {
    Client c(server.port(), 4096);
    std::string batch;
    for (int j = 0; j < 20000; ++j) batch += "PING\n";
    c.send(batch);
    c.reset();
  }
  Client c(server.port());
  c.send("PING\n");
  EXPECT_EQ(c.read_line(), "PONG");
  expect_clean_exit(server);
}

}  // namespace
}  // namespace wheel::net::testing
