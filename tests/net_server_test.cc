// wheel::net::Server and wheel-server, black-box over loopback: the protocol, the idle kinds,
// DELAY, the limits, bad input, shutdown and workers. Most tests run the real wheel-server
// binary as a child process (so a sanitizer report in it fails the test through its exit
// status); one runs a Server in-process.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <thread>

#include "net_test_support.h"
#include "wheel/net/server.h"

namespace wheel::net::testing {
namespace {

// The common flags of a test server: port 0, no stats line, a fine tick.
std::vector<std::string> server_args(std::vector<std::string> extra) {
  std::vector<std::string> args = {"--port", "0", "--stats-interval", "0", "--tick", "10ms"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// Stops the server and checks a clean, prompt exit (a sanitizer report makes it non-zero).
void expect_clean_exit(ServerProcess& server) {
  const auto start = Clock::now();
  const std::optional<int> status = server.stop(SIGTERM);
  ASSERT_TRUE(status.has_value()) << "the server did not exit";
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << "wait status " << *status;
  EXPECT_LT(ms_since(start), 2000);
}

nlohmann::json stats_of(Client& c) {
  c.send("STATS\n");
  const std::string line = c.read_line();
  EXPECT_EQ(line.rfind("STATS {", 0), 0u) << line;
  return nlohmann::json::parse(line.substr(6));
}

// ---- protocol -----------------------------------------------------------------------------

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
  c.send("PI");
  std::this_thread::sleep_for(50ms);
  c.send("N");
  std::this_thread::sleep_for(50ms);
  c.send("G\r");
  std::this_thread::sleep_for(50ms);
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

// ---- DELAY --------------------------------------------------------------------------------

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

TEST(NetServerDelay, PendingDelaysAreCancelledWhenTheConnectionCloses) {
  ServerProcess server(server_args({}));
  {
    Client c(server.port());
    std::string batch;
    for (int i = 0; i < 100; ++i) batch += "DELAY " + std::to_string(200 + i) + " x\n";
    c.send(batch);
    for (int i = 0; i < 100; ++i) ASSERT_EQ(c.read_line(), "OK");
  }
  Client observer(server.port());
  const auto start = Clock::now();
  while (stats_of(observer)["delayed_pending"] != 0 && ms_since(start) < 5000) {
    std::this_thread::sleep_for(10ms);
  }
  std::this_thread::sleep_for(500ms);  // past every delay: nothing may have been sent
  const nlohmann::json stats = stats_of(observer);
  EXPECT_EQ(stats["delayed_pending"], 0);
  EXPECT_EQ(stats["delayed_sent"], 0);
  expect_clean_exit(server);
}

// ---- idle detection -----------------------------------------------------------------------

// Reads until "BYE idle" and EOF; returns the ms from `since`, or -1.
long long ms_until_bye_idle(Client& c, Clock::time_point since) {
  const std::string line = c.read_line(10s);
  const long long elapsed = ms_since(since);
  if (line != "BYE idle") {
    ADD_FAILURE() << "expected BYE idle, got " << line;
    return -1;
  }
  EXPECT_EQ(c.read_line(), "<eof>");
  return elapsed;
}

TEST(NetServerIdle, ReaderIdleClosesNoEarlierThanItsDelayAfterTheLastInput) {
  ServerProcess server(server_args({"--reader-idle", "400ms"}));
  Client c(server.port());
  std::this_thread::sleep_for(150ms);  // activity after the first timeout was scheduled
  c.send("PING\n");
  const auto last_input = Clock::now();
  EXPECT_EQ(c.read_line(), "PONG");
  const long long elapsed = ms_until_bye_idle(c, last_input);
  EXPECT_GE(elapsed, 400 - 2);         // ms rounding of the loop clock
  EXPECT_LT(elapsed, 400 + 10 + 600);  // one tick + generous slack for a noisy machine
  Client observer(server.port());
  EXPECT_EQ(stats_of(observer)["idle_closed"], 1);
  expect_clean_exit(server);
}

TEST(NetServerIdle, PingsKeepAReaderIdleConnectionAlive) {
  ServerProcess server(server_args({"--reader-idle", "300ms"}));
  Client c(server.port());
  const auto start = Clock::now();
  while (ms_since(start) < 1500) {  // five idle periods
    c.send("PING\n");
    ASSERT_EQ(c.read_line(), "PONG");
    std::this_thread::sleep_for(100ms);
  }
  c.send("PONG\n");  // activity without a reply
  const auto last_input = Clock::now();
  EXPECT_GE(ms_until_bye_idle(c, last_input), 300 - 2);
  expect_clean_exit(server);
}

TEST(NetServerIdle, WriterIdleSendsPingHeartbeatsAndKeepsTheConnection) {
  ServerProcess server(server_args({"--reader-idle", "0", "--writer-idle", "300ms"}));
  const auto connecting = Clock::now();  // the server accepts after this
  Client c(server.port());
  // The k-th heartbeat is written at least 300 ms after the one before: bounds measured from
  // the connect, so a late read on this side cannot make a gap look short.
  for (int k = 1; k <= 3; ++k) {
    EXPECT_EQ(c.read_line(), "PING");
    const long long elapsed = ms_since(connecting);
    EXPECT_GE(elapsed, k * (300 - 2));
    EXPECT_LT(elapsed, k * (300 + 10) + 600);
  }
  c.send("PONG\n");
  EXPECT_EQ(stats_of(c)["heartbeats"], 3);
  expect_clean_exit(server);
}

TEST(NetServerIdle, WritesPostponeTheWriterIdleHeartbeat) {
  ServerProcess server(server_args({"--reader-idle", "0", "--writer-idle", "400ms"}));
  Client c(server.port());
  const auto start = Clock::now();
  auto last_ping_sent = Clock::now();
  while (ms_since(start) < 1000) {  // the PONG replies are writes
    last_ping_sent = Clock::now();  // the server writes its PONG after this
    c.send("PING\n");
    ASSERT_EQ(c.read_line(), "PONG");
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(c.read_line(), "PING");
  EXPECT_GE(ms_since(last_ping_sent), 400 - 2);
  EXPECT_EQ(stats_of(c)["heartbeats"], 1);
  expect_clean_exit(server);
}

TEST(NetServerIdle, AllIdleClosesASilentConnection) {
  ServerProcess server(server_args({"--reader-idle", "0", "--all-idle", "400ms"}));
  const auto connected = Clock::now();
  Client c(server.port());
  const long long elapsed = ms_until_bye_idle(c, connected);
  EXPECT_GE(elapsed, 400 - 2);
  EXPECT_LT(elapsed, 400 + 10 + 600);
  expect_clean_exit(server);
}

TEST(NetServerIdle, AllIdleConnectionKeptAliveByItsPingsSurvives) {
  ServerProcess server(server_args({"--reader-idle", "0", "--all-idle", "300ms"}));
  Client c(server.port());
  const auto start = Clock::now();
  while (ms_since(start) < 1200) {
    c.send("PING\n");
    ASSERT_EQ(c.read_line(), "PONG");
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(stats_of(c)["idle_closed"], 0);
  expect_clean_exit(server);
}

// Many connections close (FIN or RST) around the moment their idle and DELAY timeouts fire:
// jobs already queued for the loop must find nothing (ASan / TSan builds check the memory).
TEST(NetServerIdle, ConnectionsClosingWhileTheirTimeoutsFireAreSafe) {
  ServerProcess server({"--port", "0", "--stats-interval", "0", "--tick", "1ms", "--reader-idle",
                        "60ms", "--writer-idle", "30ms", "--all-idle", "90ms"});
  std::mt19937 random(7);
  for (int round = 0; round < 4; ++round) {
    std::vector<Client> clients;
    for (int i = 0; i < 150; ++i) {
      clients.emplace_back(server.port());
      clients.back().send("DELAY " + std::to_string(40 + random() % 40) + " x\nDELAY 60 y\n");
    }
    const auto start = Clock::now();
    for (auto& c : clients) {
      // Close somewhere around the deadlines.
      const auto at = start + std::chrono::milliseconds(30 + random() % 60);
      std::this_thread::sleep_until(at);
      if (random() % 2) {
        c.reset();
      } else {
        c.close();
      }
    }
  }
  Client c(server.port());
  c.send("PING\n");
  EXPECT_EQ(c.read_line(), "PONG");
  const auto start = Clock::now();
  while (stats_of(c)["connections"] != 1 && ms_since(start) < 5000)
    std::this_thread::sleep_for(10ms);
  const nlohmann::json stats = stats_of(c);
  EXPECT_EQ(stats["connections"], 1);
  EXPECT_EQ(stats["delayed_pending"], 0);
  // How often the race this test is about happened (timing-dependent, so not asserted).
  std::printf("stale timeouts ignored: %s\n", stats["stale_timeouts"].dump().c_str());
  expect_clean_exit(server);
}

// ---- limits -------------------------------------------------------------------------------

TEST(NetServerLimits, ClientPastMaxConnectionsGetsServerFull) {
  ServerProcess server(server_args({"--max-connections", "3"}));
  std::vector<Client> clients;
  for (int i = 0; i < 3; ++i) {
    clients.emplace_back(server.port());
    clients.back().send("PING\n");
    ASSERT_EQ(clients.back().read_line(), "PONG");
  }
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
  Client no_newline(server.port());  // detected before any newline, across reads
  no_newline.send(std::string(10, 'b'));
  std::this_thread::sleep_for(50ms);
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

TEST(NetServerLimits, ClientThatNeverReadsIsClosedAsASlowConsumer) {
  ServerProcess server(server_args({"--max-output", "4096"}));
  Client slow(server.port(), 4096);
  const std::string batch = [] {
    std::string b;
    for (int i = 0; i < 10000; ++i) b += "PING\n";
    return b;
  }();
  // Never read: the kernel buffers fill, then the server's queue passes 4 KiB.
  bool failed = false;
  ::fcntl(slow.fd(), F_SETFL, O_NONBLOCK);
  const auto start = Clock::now();
  std::size_t sent = 0;
  while (!failed && ms_since(start) < 20000 && sent < (std::size_t{256} << 20)) {
    const ssize_t n = ::send(slow.fd(), batch.data(), batch.size(), MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
    } else if (errno == EAGAIN) {
      Client probe(server.port());
      if (stats_of(probe)["slow_consumers"] == 1) break;
      std::this_thread::sleep_for(10ms);
    } else {
      failed = true;  // reset by the server
    }
  }
  Client probe(server.port());
  EXPECT_EQ(stats_of(probe)["slow_consumers"], 1);
  probe.send("PING\n");
  EXPECT_EQ(probe.read_line(), "PONG");
  expect_clean_exit(server);
}

TEST(NetServerLimits, RunningOutOfFileDescriptorsNeitherSpinsNorStopsAccepting) {
  // 24 descriptors: the loop's own plus a few clients; the rest hit EMFILE.
  ServerProcess server(server_args({"--reader-idle", "0"}), 24);
  std::vector<Client> clients;
  for (int i = 0; i < 60; ++i) clients.emplace_back(server.port());
  std::this_thread::sleep_for(200ms);
  const long cpu_before = server.cpu_ms();
  std::this_thread::sleep_for(1000ms);
  const long cpu_used = server.cpu_ms() - cpu_before;
  EXPECT_LT(cpu_used, 300) << "the server spins on EMFILE";
  // The spare descriptor accepted the clients past the limit, told them and closed them:
  // they do not wait forever in the backlog.
  int closed = 0;
  for (auto& c : clients) closed += c.read_line(100ms) == "ERR server full" ? 1 : 0;
  EXPECT_GE(closed, 1);
  clients.clear();
  std::this_thread::sleep_for(200ms);
  Client later(server.port());
  later.send("PING\n");
  EXPECT_EQ(later.read_line(), "PONG");
  expect_clean_exit(server);
}

// ---- the program --------------------------------------------------------------------------

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
  ServerProcess server({"--port", "0", "--stats-interval", "100ms"}, 0, log);
  Client c(server.port());
  c.send("PING\n");
  ASSERT_EQ(c.read_line(), "PONG");
  std::this_thread::sleep_for(550ms);
  expect_clean_exit(server);
  FILE* f = std::fopen(log.c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) text.append(buf, n);
  std::fclose(f);
  std::remove(log.c_str());
  int stats_lines = 0;
  for (size_t at = 0; (at = text.find("stats worker=0", at)) != std::string::npos; ++at)
    ++stats_lines;
  EXPECT_GE(stats_lines, 3) << text;  // 5 expected; a noisy machine may delay some
  EXPECT_LE(stats_lines, 7) << text;
  EXPECT_NE(text.find("pings=1"), std::string::npos) << text;
  EXPECT_NE(text.find("final counters"), std::string::npos) << text;
}

TEST(NetServerProgram, ListeningLineNamesHostAndPort) {
  ServerProcess server(server_args({"--host", "127.0.0.1"}));
  EXPECT_EQ(server.first_line(), "listening on 127.0.0.1:" + std::to_string(server.port()));
  expect_clean_exit(server);
}

// Runs wheel-server with `args`; returns {exit status, stderr}.
std::pair<int, std::string> run_to_exit(std::vector<std::string> args) {
  int err[2];
  EXPECT_EQ(::pipe(err), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(err[1], STDERR_FILENO);
    ::dup2(err[1], STDOUT_FILENO);
    std::vector<char*> argv;
    std::string binary = WHEEL_SERVER_PATH;
    argv.push_back(binary.data());
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(binary.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(err[1]);
  std::string text;
  char buf[1024];
  ssize_t n;
  while ((n = ::read(err[0], buf, sizeof(buf))) > 0) text.append(buf, static_cast<size_t>(n));
  ::close(err[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, text};
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
    const auto [code, text] = run_to_exit({option, value});
    EXPECT_EQ(code, 2) << option << " " << value << ": " << text;
    EXPECT_NE(text.find(option), std::string::npos) << text;
  }
  const auto [code, text] = run_to_exit({"--reader-idle", "30"});
  EXPECT_NE(text.find("30s"), std::string::npos) << "names the expected form: " << text;
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

// ---- in-process -----------------------------------------------------------------------------

TEST(NetServerInProcess, RunsOnItsThreadAndShutsDownFromAnother) {
  ServerOptions options;
  options.port = 0;
  options.tick = 5ms;
  options.reader_idle = 200ms;
  options.stats_interval = 0ms;
  Server server(options);
  const std::uint16_t port = server.listen();
  ASSERT_NE(port, 0);
  ServerStats final_stats;
  std::thread loop([&] { final_stats = server.run(); });
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
  ServerOptions options;
  options.tick = 0ms;
  EXPECT_THROW(Server{options}, std::invalid_argument);
  options = ServerOptions{};
  options.max_line = 0;
  EXPECT_THROW(Server{options}, std::invalid_argument);
}

}  // namespace
}  // namespace wheel::net::testing
