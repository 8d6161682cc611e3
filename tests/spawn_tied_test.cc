// SPDX-License-Identifier: Apache-2.0
// tests/support/spawn.h: a server a test starts must not outlive the test. Each case starts a
// server the way the tests do, from a holder process standing in for a test binary, SIGKILLs the
// holder (what ctest's timeout does) and waits for the server to be gone.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "net_test_support.h"
#include "support/child_process.h"
#include "support/redis_server.h"
#include "support/spawn.h"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// The first 511 bytes of the file at `path`, or "".
std::string read_text(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return {};
  char buf[512] = {};
  const std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  return std::string(buf, n);
}

// True once `pid` has died: no such process, or a zombie waiting for a reaper that is not us.
bool gone(pid_t pid) {
  if (::kill(pid, 0) != 0) return errno == ESRCH;
  const std::string stat = read_text("/proc/" + std::to_string(pid) + "/stat");
  const std::size_t paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] == 'Z' ||
         stat[paren + 2] == 'X';
}

// Forks a holder that runs `start` (which starts a server and returns its pid, or -1) and then
// waits to be killed. Returns {holder, server}; server is -1 when nothing started in 90 s.
std::pair<pid_t, pid_t> start_in_holder(const std::function<pid_t()>& start) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return {-1, -1};
  const pid_t holder = ::fork();
  if (holder == 0) {
    ::alarm(120);  // a holder the test forgot ends on its own, and takes its server along
    const pid_t server = start();
    [[maybe_unused]] const ssize_t w = ::write(fds[1], &server, sizeof server);
    for (;;) ::pause();
  }
  ::close(fds[1]);
  pid_t server = -1;
  pollfd p{fds[0], POLLIN, 0};
  if (holder > 0 && ::poll(&p, 1, 90'000) == 1 &&
      ::read(fds[0], &server, sizeof server) != static_cast<ssize_t>(sizeof server)) {
    server = -1;
  }
  ::close(fds[0]);
  return {holder, server};
}

struct Starter {
  const char* name;
  std::function<pid_t()> start;  // runs in the holder; leaks its server object on purpose
};

std::vector<Starter> starters() {
  return {
      {"SpawnTiedItself",
       [] {
         const pid_t pid = wheel_test::spawn_tied({wheel_test::find_program("sleep"), "600"});
         // Up once it runs sleep: killed earlier, the holder would test the getppid() check.
         const std::string comm = "/proc/" + std::to_string(pid) + "/comm";
         for (int i = 0; i < 500 && read_text(comm) != "sleep\n"; ++i) ::usleep(20'000);
         return pid;
       }},
      {"RedisServer", [] { return (new wheel_test::RedisServer)->pid(); }},
      {"WheelJobsServerProcess",
       [] {
         return (new wheel_test::ServerProcess({WHEEL_JOBS_PATH, "--port", "0"}))->pid();
       }},
      {"WheelServerServerProcess",
       []() -> pid_t {
         try {
           return (new wheel::net::testing::ServerProcess({"--port", "0"}))->pid();
         } catch (const std::exception&) {
           return -1;
         }
       }},
  };
}

void PrintTo(const Starter& s, std::ostream* os) {
  *os << s.name;
}

class SpawnTied : public ::testing::TestWithParam<Starter> {};

TEST_P(SpawnTied, TheServerDiesWithTheProcessThatStartedIt) {
  const auto [holder, server] = start_in_holder(GetParam().start);
  ASSERT_GT(holder, 0);
  if (server <= 0) {
    ::kill(holder, SIGKILL);
    ::waitpid(holder, nullptr, 0);
    FAIL() << "the holder could not start the server";
  }
  EXPECT_FALSE(gone(server)) << "the server is up while its holder lives";
  ::kill(holder, SIGKILL);  // what ctest's timeout does: no destructor runs
  ASSERT_EQ(::waitpid(holder, nullptr, 0), holder);
  const auto deadline = Clock::now() + 20s;  // generous: the kernel kills it at once
  while (!gone(server) && Clock::now() < deadline) std::this_thread::sleep_for(20ms);
  if (!gone(server)) {
    ::kill(server, SIGKILL);
    FAIL() << "server " << server << " outlived the process that started it";
  }
}

INSTANTIATE_TEST_SUITE_P(Spawners, SpawnTied, ::testing::ValuesIn(starters()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(SpawnTiedRules, RefusesToStartFromAThreadOtherThanMain) {
  pid_t pid = 0;
  EXPECT_NONFATAL_FAILURE_ON_ALL_THREADS(
      {
        std::thread([&pid] {
          pid = wheel_test::spawn_tied({wheel_test::find_program("true")});
        }).join();
      },
      "off the main thread");
  EXPECT_EQ(pid, -1);
}

TEST(SpawnTiedRules, AProgramThatCannotRunExits127) {
  const pid_t pid = wheel_test::spawn_tied({"/nonexistent/program"});
  ASSERT_GT(pid, 0);
  EXPECT_EQ(wheel_test::wait_with_deadline(pid, Clock::now() + 30s), 127);
}

}  // namespace
