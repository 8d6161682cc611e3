// SPDX-License-Identifier: Apache-2.0
// Test support: a program under test as a child process, with every wait bounded. A server
// prints "listening on HOST:PORT" as its first stdout line; ServerProcess reads its port from it
// and SIGTERMs it when destroyed. Used by the wheel-load and wheel-jobs end-to-end tests.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "spawn.h"

namespace wheel_test {

using Clock = std::chrono::steady_clock;

// A hang must fail the test in seconds, not burn ctest's 300 s: every child gets this long
// (generous: sanitizer builds on a loaded machine) beyond what its run should take.
inline constexpr std::chrono::seconds kExitGrace{30};

// Waits for `pid` to exit until `deadline`; then SIGKILLs it and reaps it.
// Returns its exit status (128 + signal when killed by one), or -1 when it had to be killed.
inline int wait_with_deadline(pid_t pid, Clock::time_point deadline) {
  int status = 0;
  while (true) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (r < 0) return -1;
    if (Clock::now() >= deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      ADD_FAILURE() << "child " << pid << " did not exit in time; killed it";
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// Starts args[0] with `args`, its stdout (and stderr when >= 0) on the given descriptors, as a
// child that dies with this process (spawn.h). Returns its pid, or -1.
inline pid_t spawn(const std::vector<std::string>& args, int stdout_fd, int stderr_fd = -1) {
  return spawn_tied(args, SpawnOptions{.stdout_fd = stdout_fd, .stderr_fd = stderr_fd});
}

// `program` run with `args` (shell words) until it exits: {exit status (-1: not an exit),
// stdout+stderr}. For options refused before anything starts.
inline std::pair<int, std::string> run_to_exit(const std::string& program,
                                               const std::string& args) {
  const std::string command = program + " " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return {-1, "popen failed"};
  std::string out;
  char buf[4096];
  while (fgets(buf, sizeof buf, pipe) != nullptr) out.append(buf);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// A server child process that printed "listening on HOST:PORT"; SIGTERMed when destroyed.
// Its stderr (the log) goes to `stderr_fd` when >= 0, else to ours.
class ServerProcess {
 public:
  explicit ServerProcess(const std::vector<std::string>& args, int stderr_fd = -1) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return;
    pid_ = spawn(args, fds[1], stderr_fd);
    close(fds[1]);
    std::string out;
    const auto deadline = Clock::now() + std::chrono::seconds(60);  // sanitizer start-up
    while (pid_ > 0 && out.find('\n') == std::string::npos && Clock::now() < deadline) {
      pollfd p{fds[0], POLLIN, 0};
      if (poll(&p, 1, 200) <= 0) continue;
      char buf[256];
      const ssize_t n = read(fds[0], buf, sizeof buf);
      if (n <= 0) break;
      out.append(buf, static_cast<std::size_t>(n));
    }
    close(fds[0]);  // the server writes nothing else on stdout
    const auto colon = out.rfind(':');
    if (out.starts_with("listening on unix:")) {  // a unix-domain socket: no port
      where_ = out.substr(13, out.find('\n') - 13);
    } else if (out.starts_with("listening on ") && colon != std::string::npos) {
      port_ = std::stoi(out.substr(colon + 1));
      where_ = out.substr(13, out.find('\n') - 13);
    }
  }
  ~ServerProcess() { signal_and_wait(SIGTERM); }
  int port() const { return port_; }
  // What the "listening on" line named ("127.0.0.1:4000", "unix:/tmp/x.sock"); empty: none.
  const std::string& where() const { return where_; }
  pid_t pid() const { return pid_; }
  // Sends SIGTERM now and waits for the exit; returns the exit status (see wait_with_deadline).
  int stop() { return signal_and_wait(SIGTERM); }
  // Sends SIGKILL now (kill -9: no handler runs) and reaps the process; returns its exit status
  // (see wait_with_deadline: 128 + 9 when the signal killed it).
  int kill_now() { return signal_and_wait(SIGKILL); }

 private:
  // Sends `sig` and waits for the exit; -1 when nothing runs (or see wait_with_deadline).
  int signal_and_wait(int sig) {
    if (pid_ <= 0) return -1;
    kill(pid_, sig);
    const int status = wait_with_deadline(pid_, Clock::now() + kExitGrace);
    pid_ = -1;
    return status;
  }

  pid_t pid_ = -1;
  int port_ = 0;
  std::string where_;
};

}  // namespace wheel_test
