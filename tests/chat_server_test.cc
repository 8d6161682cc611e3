// SPDX-License-Identifier: Apache-2.0
// examples/chat_server.cc end to end: three clients through every row of the table in docs/net.md.
// ServerProcess starts the chat-server binary here (WHEEL_SERVER_PATH names it).
#include <gtest/gtest.h>

#include <string>

#include "net_test_support.h"

namespace wheel::net::testing {
namespace {

// Sends PING and expects PONG as the very next line: nothing else arrived before it.
void expect_nothing_pending(Client& c) {
  c.send("PING\n");
  EXPECT_EQ(c.read_line(), "PONG");
}

TEST(ChatServer, ThreeClientsThroughEveryRow) {
  ServerProcess server(
      {"--port", "0", "--reader-idle", "60s", "--writer-idle", "0", "--tick", "10ms"});
  EXPECT_EQ(server.first_line(), "listening on 127.0.0.1:" + std::to_string(server.port()));
  Client a(server.port()), b(server.port()), c(server.port());

  // :name
  a.send(":name alice\n");
  EXPECT_EQ(a.read_line(), "OK");
  for (const char* bad : {":name bad name", ":name ", ":name caf\xc3\xa9",
                          ":name 123456789012345678901234567890123"}) {
    b.send(std::string(bad) + "\n");
    EXPECT_EQ(b.read_line(), "ERR bad name") << bad;
  }
  b.send(":name alice\n");
  EXPECT_EQ(b.read_line(), "ERR name taken");
  b.send(":name bob_-2\n");
  EXPECT_EQ(b.read_line(), "OK");

  // Anything else before a name.
  c.send("hello\n:delay x 1\n");
  EXPECT_EQ(c.read_line(), "ERR name first");
  EXPECT_EQ(c.read_line(), "ERR name first");
  c.send(":name carol\n");
  EXPECT_EQ(c.read_line(), "OK");

  // <text> goes to every other named client.
  a.send("hi all\n");
  EXPECT_EQ(b.read_line(), "alice: hi all");
  EXPECT_EQ(c.read_line(), "alice: hi all");
  expect_nothing_pending(a);

  // PING / PONG are heartbeats, not broadcast.
  b.send("PONG\n");
  expect_nothing_pending(b);
  expect_nothing_pending(a);
  expect_nothing_pending(c);

  // :delay: OK now, the others get it after the delay.
  const auto sent = Clock::now();
  a.send(":delay hahah 1\n");
  EXPECT_EQ(a.read_line(), "OK");
  EXPECT_EQ(b.read_line(10s), "alice (delayed): hahah");
  EXPECT_GE(ms_since(sent), 1000);
  EXPECT_EQ(c.read_line(10s), "alice (delayed): hahah");
  expect_nothing_pending(a);
  for (const char* bad :
       {":delay x 0", ":delay x 86401", ":delay x", ":delay 5", ":delay x 1s", ":delay x -1"}) {
    a.send(std::string(bad) + "\n");
    EXPECT_EQ(a.read_line(), "ERR bad delay") << bad;
  }

  // A delayed message is cancelled when its sender leaves first; :quit says BYE and closes.
  c.send(":delay never 1\n");
  EXPECT_EQ(c.read_line(), "OK");
  c.send(":quit\n");
  EXPECT_EQ(c.read_line(), "BYE");
  EXPECT_EQ(c.read_line(), "<eof>");
  std::this_thread::sleep_for(2500ms);
  expect_nothing_pending(a);
  expect_nothing_pending(b);

  // The name of a client that left is free again.
  Client d(server.port());
  d.send(":name carol\n");
  EXPECT_EQ(d.read_line(), "OK");
  b.send("welcome back\n");
  EXPECT_EQ(d.read_line(), "bob_-2: welcome back");
  EXPECT_EQ(a.read_line(), "bob_-2: welcome back");

  const std::optional<int> status = server.stop(SIGTERM);
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
  EXPECT_EQ(a.read_line(), "BYE shutdown");
}

TEST(ChatServer, SilentClientIsPingedThenDroppedAsIdle) {
  ServerProcess server(
      {"--port", "0", "--reader-idle", "1500ms", "--writer-idle", "300ms", "--tick", "10ms"});
  Client quiet(server.port());
  const auto start = Clock::now();
  // The quiet one never writes: server PINGs every 300 ms of its silence, then BYE idle.
  EXPECT_EQ(quiet.read_line(10s), "PING");
  EXPECT_GE(ms_since(start), 300);
  std::string line;
  int pings = 1;
  while ((line = quiet.read_line(10s)) == "PING") ++pings;
  EXPECT_EQ(line, "BYE idle");
  EXPECT_GE(ms_since(start), 1500);
  EXPECT_GE(pings, 2);
  EXPECT_EQ(quiet.read_line(), "<eof>");
  // One that answers the PINGs stays (6 x 300 ms is longer than the reader-idle time).
  Client chatty(server.port());
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(chatty.read_line(10s), "PING");
    chatty.send("PONG\n");
  }
  expect_nothing_pending(chatty);
}

TEST(ChatServer, BadOptionsExitTwo) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"--reader-idle", "30"},
                                               {"--port", "x"},
                                               {"--tick", "0"},
                                               {"--nope", "1"},
                                               {"--port"}}) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      const int null = ::open("/dev/null", O_WRONLY);
      ::dup2(null, STDERR_FILENO);
      std::vector<std::string> mine = args;
      exec_server(mine);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << args[0];
  }
}

}  // namespace
}  // namespace wheel::net::testing
