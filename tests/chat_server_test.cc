// SPDX-License-Identifier: Apache-2.0
// examples/chat_server.cc end to end: three clients through every row of the table in docs/net.md.
// ServerProcess starts the chat-server binary here (WHEEL_SERVER_PATH names it).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

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
  // At most 1500 / 300 + 1 PINGs come before the close; the bound keeps a server that pings
  // forever from hanging the test.
  std::string line;
  int pings = 1;
  while ((line = quiet.read_line(10s)) == "PING" && pings < 20) ++pings;
  EXPECT_EQ(line, "BYE idle");
  EXPECT_LE(pings, 8);
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

// A named client on `port`.
Client named(std::uint16_t port, const std::string& name) {
  Client c(port);
  c.send(":name " + name + "\n");
  EXPECT_EQ(c.read_line(), "OK");
  return c;
}

TEST(ChatServer, DelayedMessagesAreBoundedPerClientAndInAll) {
  // A stored message is "<name> (delayed): <text>\n": 16 bytes of text make 32 with "ann",
  // "x" makes 17.
  ServerProcess server({"--port", "0", "--reader-idle", "60s", "--writer-idle", "0", "--tick",
                        "10ms", "--max-connection-delayed", "3", "--max-connection-delayed-bytes",
                        "70", "--max-delayed-bytes", "100"});
  const std::string text(16, 'x');
  Client ann = named(server.port(), "ann"), bob = named(server.port(), "bob");
  Client cat = named(server.port(), "cat"), dan = named(server.port(), "dan");
  // 70 bytes per client hold two of ann's 32-byte messages.
  ann.send(":delay " + text + " 3600\n:delay " + text + " 3600\n:delay " + text + " 3600\n");
  EXPECT_EQ(ann.read_line(), "OK");
  EXPECT_EQ(ann.read_line(), "OK");
  EXPECT_EQ(ann.read_line(), "ERR delayed limit");  // 96 > 70 bytes of ann's
  bob.send(":delay x 3600\n:delay x 3600\n:delay x 3600\n:delay x 3600\n");
  EXPECT_EQ(bob.read_line(), "OK");
  EXPECT_EQ(bob.read_line(), "OK");
  EXPECT_EQ(bob.read_line(), "ERR delayed limit");  // all clients: 64 + 2 x 17 + 17 > 100
  EXPECT_EQ(bob.read_line(), "ERR delayed limit");
  // The total is full for everyone, whatever their own share.
  cat.send(":delay x 3600\n");
  EXPECT_EQ(cat.read_line(), "ERR delayed limit");
  // A sender that leaves frees its share: ann's 64 bytes come back.
  ann.send(":quit\n");
  EXPECT_EQ(ann.read_line(), "BYE");
  EXPECT_TRUE(ann.wait_closed());
  cat.send(":delay x 3600\n:delay x 3600\n:delay x 3600\n:delay x 3600\n");
  for (int i = 0; i < 3; ++i) EXPECT_EQ(cat.read_line(), "OK") << i;
  EXPECT_EQ(cat.read_line(), "ERR delayed limit");  // 3 per client
  // A delivered message frees its share too.
  dan.send(":delay " + text + " 1\n");
  EXPECT_EQ(dan.read_line(), "ERR delayed limit");  // 85 + 32 > 100
  bob.send(":quit\n");
  EXPECT_EQ(bob.read_line(), "BYE");
  EXPECT_TRUE(bob.wait_closed());
  dan.send(":delay " + text + " 1\n");
  EXPECT_EQ(dan.read_line(), "OK");
  EXPECT_EQ(cat.read_line(10s), "dan (delayed): " + text);
  dan.send(":delay " + text + " 3600\n");
  EXPECT_EQ(dan.read_line(), "OK");  // 51 + 32: the delivered 32 bytes came back
}

// Resident memory of process `pid` in bytes (VmRSS), or 0 when unreadable.
std::size_t resident_bytes(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  std::size_t kb = 0;
  while (status >> key) {
    if (key == "VmRSS:" && (status >> kb)) return kb * 1024;
  }
  return 0;
}

TEST(ChatServer, StoresEachDelayedMessageAtItsSize) {
  // 20 clients x 100 delayed 4,000-byte messages: 8 MB of text. Stored at its size, resident
  // memory grows by little more than the text (the timeout, its handle and the task are ~150 B
  // a message); a string grown past its capacity took twice the text (8,189 B per message).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "the sanitizers' allocators add bytes of their own to every allocation";
#endif
  ServerProcess server({"--port", "0", "--reader-idle", "600s", "--writer-idle", "0"});
  constexpr int kClients = 20, kPerClient = 100;
  const std::string text(4000, 'x');
  std::vector<Client> clients;
  for (int i = 0; i < kClients; ++i)
    clients.push_back(named(server.port(), "c" + std::to_string(i)));
  const std::size_t before = resident_bytes(server.pid());
  ASSERT_GT(before, 0u);
  std::string batch;
  for (int i = 0; i < kPerClient; ++i) batch += ":delay " + text + " 3600\n";
  for (Client& c : clients) ASSERT_TRUE(c.send(batch));
  for (Client& c : clients) {
    for (int i = 0; i < kPerClient; ++i) ASSERT_EQ(c.read_line(10s), "OK") << i;
  }
  const std::size_t grown = resident_bytes(server.pid()) - before;
  const std::size_t messages = kClients * kPerClient;
  EXPECT_LT(grown / messages, 5000u) << grown / messages << " B per 4,000-byte message";
}

TEST(ChatServer, HelpDescribesTheCommandsAndExitsZero) {
  const std::string command = std::string(WHEEL_SERVER_PATH) + " --help";
  FILE* out = ::popen(command.c_str(), "r");
  ASSERT_NE(out, nullptr);
  std::string help;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof(buf), out)) > 0;) help.append(buf, n);
  const int status = ::pclose(out);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  for (const char* part : {":name NAME", ":delay TEXT SECS", ":quit", "PING", "--reader-idle",
                           "--max-delayed-bytes", "(default 268435456)"}) {
    EXPECT_NE(help.find(part), std::string::npos) << part << " is not in:\n" << help;
  }
}

TEST(ChatServer, BadOptionsExitTwo) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"--reader-idle", "30"},
                                               {"--port", "x"},
                                               {"--tick", "0"},
                                               {"--nope", "1"},
                                               {"--max-delayed-bytes", "0"},
                                               {"--max-connection-delayed", "99999999999999999999"},
                                               {"--port"}}) {
    const auto [code, text] = run_server_to_exit(args);
    EXPECT_EQ(code, 2) << args[0] << ": " << text;
  }
}

}  // namespace
}  // namespace wheel::net::testing
