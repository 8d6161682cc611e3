// SPDX-License-Identifier: Apache-2.0
// wheel-server over loopback, the limits: max connections, max line, slow consumers, descriptors.
// The tests run the real wheel-server binary as a child process (a sanitizer report in it
// fails the test through its exit status) unless they say otherwise.
#include <gtest/gtest.h>

#include <thread>

#include "net_test_support.h"

namespace wheel::net::testing {
namespace {

TEST(NetServerLimits, ClientPastMaxConnectionsGetsServerFull) {
  ServerProcess server(server_args({"--max-connections", "3"}));
  std::vector<Client> clients = pinged_clients(server.port(), 3);
  ASSERT_EQ(clients.size(), 3u);
  Client extra(server.port());
  EXPECT_EQ(extra.read_line(), "ERR server full");
  EXPECT_EQ(extra.read_line(), "<eof>");
  clients[0].send("QUIT\n");
  EXPECT_EQ(clients[0].read_line(), "BYE");
  EXPECT_EQ(clients[0].read_line(), "<eof>");
  Client again(server.port());  // a slot is free again
  again.send("PING\n");
  EXPECT_EQ(again.read_line(), "PONG");
  EXPECT_EQ(stats_of(again)["rejected_full"], 1);
  expect_clean_exit(server);
}

TEST(NetServerLimits, LineOverMaxLineGetsErrAndClose) {
  ServerProcess server(server_args({"--max-line", "16"}));
  Client exact(server.port());
  exact.send(std::string(16, 'a') + "\r\n");  // 16 bytes is allowed, "\r\n" not counted
  EXPECT_EQ(exact.read_line(), "ERR unknown command");
  Client over(server.port());
  over.send(std::string(17, 'a') + "\n");
  EXPECT_EQ(over.read_line(), "ERR line too long");
  EXPECT_EQ(over.read_line(), "<eof>");
  Client no_newline(server.port());  // detected before any newline, across two reads
  ServerReadWatcher watcher(server.port());
  const std::uint64_t before = 18 + 18;  // what `exact` and `over` sent
  no_newline.send(std::string(10, 'b'));
  ASSERT_TRUE(watcher.wait_for(before + 10));
  no_newline.send(std::string(10, 'b'));
  EXPECT_EQ(no_newline.read_line(), "ERR line too long");
  EXPECT_EQ(no_newline.read_line(), "<eof>");
  expect_clean_exit(server);
}

TEST(NetServerLimits, DefaultMaxLineIs4096) {
  ServerProcess server(server_args({}));
  Client ok(server.port());
  ok.send("DELAY 1 " + std::string(4096 - 8, 'x') + "\n");
  EXPECT_EQ(ok.read_line(), "OK");
  EXPECT_EQ(ok.read_line(), "DELAYED " + std::string(4096 - 8, 'x'));
  Client over(server.port());
  over.send(std::string(4097, 'x') + "\n");
  EXPECT_EQ(over.read_line(), "ERR line too long");
  expect_clean_exit(server);
}

TEST(NetServerLimits, ClientThatNeverReadsIsPausedNotClosed) {
  // Pipelined PINGs from a client that reads nothing: past half of --max-output of queued
  // PONGs the server stops reading it (the line protocol's output bound), so its replies
  // never pass the bound and it is not closed as a slow consumer; others are served.
  ServerProcess server(server_args({"--max-output", "4096"}));
  Client slow(server.port(), 4096);
  const std::string batch = [] {
    std::string b;
    for (int i = 0; i < 10000; ++i) b += "PING\n";
    return b;
  }();
  ::fcntl(slow.fd(), F_SETFL, O_NONBLOCK);
  const auto start = Clock::now();
  std::size_t sent = 0;
  int refused = 0;  // sends refused in a row: the kernel buffers are full both ways
  while (ms_since(start) < 20000 && refused < 50) {
    const ssize_t n = ::send(slow.fd(), batch.data(), batch.size(), MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
      refused = 0;
    } else {
      ASSERT_EQ(errno, EAGAIN) << "the server closed the client that never reads";
      ++refused;
      std::this_thread::sleep_for(10ms);
    }
  }
  EXPECT_EQ(refused, 50) << "the server kept reading the client that never reads";
  Client probe(server.port());
  EXPECT_EQ(stats_of(probe)["slow_consumers"], 0);
  probe.send("PING\n");
  EXPECT_EQ(probe.read_line(), "PONG");
  slow.close();
  expect_clean_exit(server);
}

// Out of descriptors, the server neither spins nor stops accepting. Judged on events, not
// on CPU over a fixed sleep: the poll is level-triggered, so it can only spin while clients
// wait in the backlog; the spare descriptor empties the backlog, each waiting client told
// "ERR server full". So every client is accounted for (accepted or refused) and the back-off
// path that stops the poll was never needed (accept_errors 0).
TEST(NetServerLimits, RunningOutOfFileDescriptorsNeitherSpinsNorStopsAccepting) {
  // 24 descriptors: the loop's own plus a few clients; the rest hit EMFILE.
  ServerProcess server(server_args({"--reader-idle", "0"}), 24);
  // The observer is served before the descriptors run out (a first STATS also lets a
  // sanitizer build set up what it needs while it still can open files).
  Client first(server.port());
  ASSERT_EQ(stats_of(first)["accepted"], 1);
  std::vector<Client> clients;
  for (int i = 0; i < 60; ++i) clients.emplace_back(server.port());
  nlohmann::json stats;
  for (int i = 0; i < 1000; ++i) {  // bounded: 1000 x >= 10 ms
    stats = stats_of(first);
    if (stats["accepted"].get<int>() + stats["rejected_emfile"].get<int>() +
            stats["rejected_full"].get<int>() ==
        61) {
      break;
    }
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(stats["accepted"].get<int>() + stats["rejected_emfile"].get<int>(), 61)
      << "clients left waiting in the backlog: the listener stays readable, the loop spins";
  EXPECT_GE(stats["rejected_emfile"].get<int>(), 1);
  EXPECT_EQ(stats["accept_errors"], 0) << "the spare descriptor was lost";
  int told = 0;
  for (auto& c : clients) told += c.read_line(100ms) == "ERR server full" ? 1 : 0;
  EXPECT_EQ(told, stats["rejected_emfile"].get<int>());
  // Descriptors free again: the next client is served (bounded retries while the server
  // closes the ones just released).
  clients.clear();
  std::string reply;
  for (int i = 0; i < 100 && reply != "PONG"; ++i) {
    Client later(server.port());
    later.send("PING\n");
    reply = later.read_line(5s);
    if (reply != "PONG") std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(reply, "PONG");
  expect_clean_exit(server);
}

}  // namespace
}  // namespace wheel::net::testing
