// SPDX-License-Identifier: Apache-2.0
// wheel-server over loopback, the program: shutdown, signals, stats line, listening line, options,
// workers. The tests run the real wheel-server binary as a child process (a sanitizer report in it
// fails the test through its exit status) unless they say otherwise.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <thread>

#include "net_test_support.h"
#include "support/wait_until.h"

namespace wheel::net::testing {
namespace {

TEST(NetServerProgram, ShutdownSaysByeToEveryClientAndExitsZeroWithinTwoSeconds) {
  ServerProcess server(server_args({}));
  std::vector<Client> clients;
  for (int i = 0; i < 5; ++i) {
    clients.emplace_back(server.port());
    clients.back().send("DELAY 60000 never\n");
    ASSERT_EQ(clients.back().read_line(), "OK");
  }
  Client never_reads(server.port(), 4096);  // its output may not fit: cut off, still in time
  never_reads.send("PING\n");
  expect_clean_exit(server);
  for (auto& c : clients) {
    EXPECT_EQ(c.read_line(), "BYE shutdown");
    EXPECT_EQ(c.read_line(), "<eof>");
  }
  EXPECT_EQ(server.rest_of_stdout(), "") << "the listening line must be the only stdout";
}

TEST(NetServerProgram, SigintAlsoShutsDownGracefully) {
  ServerProcess server(server_args({}));
  Client c(server.port());
  c.send("PING\n");
  ASSERT_EQ(c.read_line(), "PONG");
  const std::optional<int> status = server.stop(SIGINT);
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
  EXPECT_EQ(c.read_line(), "BYE shutdown");
}

TEST(NetServerProgram, LogsAStatsLineEveryStatsInterval) {
  const std::string log =
      ::testing::TempDir() + "/wheel-server-stats-" + std::to_string(::getpid()) + ".log";
  const auto read_log = [&] {
    std::ifstream in(log);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  const auto stats_lines = [](const std::string& text) {
    int lines = 0;
    for (size_t at = 0; (at = text.find("stats worker=0", at)) != std::string::npos; ++at) ++lines;
    return lines;
  };
  const auto spawned = Clock::now();
  ServerProcess server({"--port", "0", "--stats-interval", "100ms"}, 0, log);
  Client c(server.port());
  c.send("PING\n");
  ASSERT_EQ(c.read_line(), "PONG");
  std::this_thread::sleep_for(550ms);  // about 5 intervals, for the upper bound below
  // Lines come as the server's loop runs: wait for them (events, bounded) rather than count
  // what the 550 ms held, which a stalled server or test thread made fewer or more.
  EXPECT_TRUE(wheel_test::wait_until([&] {
    const std::string text = read_log();
    return stats_lines(text) >= 3 && text.find("pings=1") != std::string::npos;
  })) << read_log();
  expect_clean_exit(server);
  const long long lifetime_ms = ms_since(spawned);
  const std::string text = read_log();
  std::remove(log.c_str());
  EXPECT_GE(stats_lines(text), 3) << text;
  // At most one per interval of the server's life: a timer re-armed too soon logs more.
  EXPECT_LE(stats_lines(text), 1 + lifetime_ms / 100) << lifetime_ms << " ms: " << text;
  EXPECT_NE(text.find("pings=1"), std::string::npos) << text;
  EXPECT_NE(text.find("final counters"), std::string::npos) << text;
}

TEST(NetServerProgram, ListeningLineNamesHostAndPort) {
  ServerProcess server(server_args({"--host", "127.0.0.1"}));
  // The port is parsed from this very line: prove it is the real one by being served there.
  EXPECT_EQ(server.first_line(), "listening on 127.0.0.1:" + std::to_string(server.port()));
  EXPECT_NE(server.port(), 0);
  Client c(server.port());
  c.send("PING\n");
  EXPECT_EQ(c.read_line(), "PONG");
  expect_clean_exit(server);
}

TEST(NetServerProgram, ListensOnIpv6AndHostNames) {
  {
    ServerProcess server(server_args({"--host", "::1"}));
    EXPECT_EQ(server.first_line(), "listening on [::1]:" + std::to_string(server.port()));
    const int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in6 addr{};
    addr.sin6_family = AF_INET6;
    addr.sin6_port = htons(server.port());
    addr.sin6_addr = in6addr_loopback;
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    ::close(fd);
    expect_clean_exit(server);
  }
  ServerProcess server(server_args({"--host", "localhost"}));
  EXPECT_EQ(server.first_line(), "listening on localhost:" + std::to_string(server.port()));
  expect_clean_exit(server);
}

// --host unix:PATH: a PING over the unix-domain socket (mode 600), the file gone after SIGTERM;
// with --workers 2 it exits 2 (SO_REUSEPORT is TCP's).
TEST(NetServerProgram, ListensOnAUnixSocketAndRemovesItAtExit) {
  char pattern[] = "/tmp/wheel-server-unix-XXXXXX";
  ASSERT_NE(::mkdtemp(pattern), nullptr);
  const std::string path = std::string(pattern) + "/s.sock";
  {
    ServerProcess server({"--host", "unix:" + path, "--unix-mode", "600", "--stats-interval", "0"});
    EXPECT_EQ(server.first_line(), "listening on unix:" + path);
    struct stat st {};
    ASSERT_EQ(::lstat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    path.copy(addr.sun_path, sizeof(addr.sun_path) - 1);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    ASSERT_EQ(::send(fd, "PING\n", 5, MSG_NOSIGNAL), 5);
    char buf[16] = {};
    pollfd p{fd, POLLIN, 0};
    ASSERT_EQ(::poll(&p, 1, 10'000), 1);
    EXPECT_EQ(::recv(fd, buf, sizeof(buf) - 1, 0), 5);
    EXPECT_STREQ(buf, "PONG\n");
    ::close(fd);
    expect_clean_exit(server);
  }
  EXPECT_NE(::access(path.c_str(), F_OK), 0);
  const auto [code, text] = run_server_to_exit({"--host", "unix:" + path, "--workers", "2"});
  EXPECT_EQ(code, 2) << text;
  EXPECT_NE(text.find("--workers 1"), std::string::npos) << text;
  ::rmdir(pattern);
}

TEST(NetServerProgram, AHostThatDoesNotResolveExitsTwo) {
  for (const char* workers : {"1", "2"}) {
    const auto [code, text] =
        run_server_to_exit({"--host", "no-such-host.invalid", "--workers", workers, "--port", "0"});
    EXPECT_EQ(code, 2) << text;
    EXPECT_NE(text.find("--host"), std::string::npos) << text;
    EXPECT_NE(text.find("no-such-host.invalid"), std::string::npos) << text;
  }
}

TEST(NetServerProgram, WheelOptionsFollowTheTimersRule) {
  const auto [code, text] = run_server_to_exit({"--tick", "2562047h", "--wheel-size", "1024"});
  EXPECT_EQ(code, 2) << text;
  EXPECT_NE(text.find("--tick"), std::string::npos) << text;
  const auto [code2, text2] = run_server_to_exit({"--reader-idle", "2000h"});
  EXPECT_EQ(code2, 2) << text2;
  EXPECT_NE(text2.find("4294967295"), std::string::npos) << text2;
}

TEST(NetServerProgram, BadOptionValuesExitTwoNamingTheOption) {
  for (const auto& [option, value] :
       std::vector<std::pair<std::string, std::string>>{{"--reader-idle", "30"},
                                                        {"--writer-idle", "5x"},
                                                        {"--all-idle", "-1s"},
                                                        {"--tick", "0"},
                                                        {"--stats-interval", "1.5s"},
                                                        {"--port", "70000"},
                                                        {"--workers", "0"},
                                                        {"--log-level", "loud"},
                                                        {"--max-line", "0"}}) {
    const auto [code, text] = run_server_to_exit({option, value});
    EXPECT_EQ(code, 2) << option << " " << value << ": " << text;
    EXPECT_NE(text.find(option), std::string::npos) << text;
  }
  const auto [code, text] = run_server_to_exit({"--reader-idle", "30"});
  EXPECT_NE(text.find("30s"), std::string::npos) << "names the expected form: " << text;
}

TEST(NetServerProgram, HelpDescribesTheProtocol) {
  const auto [code, text] = run_server_to_exit({"--help"});
  EXPECT_EQ(code, 0);
  for (const char* part : {"PING               PONG", "DELAY MS TEXT", "DELAYED TEXT",
                           "STATS {json}", "QUIT               BYE", "ERR unknown command",
                           "BYE idle", "must be below --writer-idle"}) {
    EXPECT_NE(text.find(part), std::string::npos) << part << " is not in:\n" << text;
  }
}

// Idle kinds that can never fire (Netty's semantics: the server's own PINGs are output).
TEST(NetServerProgram, AllIdleThatCanNeverFireIsRefusedOrWarned) {
  const auto [code, text] =
      run_server_to_exit({"--reader-idle", "0", "--writer-idle", "1s", "--all-idle", "2s"});
  EXPECT_EQ(code, 2) << text;
  EXPECT_NE(text.find("--all-idle 2s never fires with --writer-idle 1s"), std::string::npos)
      << text;
  // With reader-idle closing silent clients the server runs and says it once on stderr.
  const std::string log = ::testing::TempDir() + "idle_warning_" + std::to_string(::getpid());
  {
    ServerProcess server({"--port", "0", "--reader-idle", "5s", "--writer-idle", "1s", "--all-idle",
                          "2s", "--stats-interval", "0"},
                         0, log);
    Client c(server.port());
    c.send("PING\n");
    EXPECT_EQ(c.read_line(), "PONG");
    expect_clean_exit(server);
  }
  std::ifstream in(log);
  const std::string err((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(err.find("warning: --all-idle 2s never fires with --writer-idle 1s"), std::string::npos)
      << err;
  std::remove(log.c_str());
}

TEST(NetServerProgram, TwoWorkersShareOnePortAndBothAccept) {
  ServerProcess server(server_args({"--workers", "2"}));
  std::set<int> workers;
  std::set<long long> pids;
  for (int i = 0; i < 200 && workers.size() < 2; ++i) {
    Client c(server.port());
    const nlohmann::json stats = stats_of(c);
    workers.insert(stats["worker"].get<int>());
    pids.insert(stats["pid"].get<long long>());
  }
  EXPECT_EQ(workers, (std::set<int>{0, 1}));
  EXPECT_EQ(pids.size(), 2u);
  EXPECT_EQ(pids.count(server.pid()), 0u) << "workers are child processes";
  Client held(server.port());
  held.send("PING\n");
  ASSERT_EQ(held.read_line(), "PONG");
  expect_clean_exit(server);
  EXPECT_EQ(held.read_line(), "BYE shutdown");
  EXPECT_EQ(server.rest_of_stdout(), "") << "the parent prints the listening line once";
}

TEST(NetServerProgram, DeadWorkerIsRestarted) {
  ServerProcess server(server_args({"--workers", "2"}));
  long long victim = 0;
  {
    Client c(server.port());
    victim = stats_of(c)["pid"].get<long long>();
  }
  ::kill(static_cast<pid_t>(victim), SIGKILL);
  std::set<long long> pids;
  const auto start = Clock::now();
  while (pids.size() < 2 && ms_since(start) < 10000) {
    try {  // a client queued at the killed worker sees a reset: just try again
      Client c(server.port());
      c.send("STATS\n");
      const std::string line = c.read_line();
      if (line.rfind("STATS {", 0) == 0) {
        const long long pid = nlohmann::json::parse(line.substr(6))["pid"].get<long long>();
        if (pid != victim) pids.insert(pid);
      }
    } catch (const std::exception&) {
    }
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(pids.size(), 2u) << "a new worker replaced the killed one";
  expect_clean_exit(server);
}

}  // namespace
}  // namespace wheel::net::testing
