// SPDX-License-Identifier: Apache-2.0
// Shared by the end-to-end tests of the wheel-load program (wheel_load_test.cc,
// load_signals_test.cc, load_peers_test.cc): wheel-load runs as a child process against a real
// server (wheel-server when built, and tests/support/line_server) over loopback, and the tests
// assert on its exit status and its --json report. Every wait here is bounded.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace wheel_load_test {

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

inline pid_t spawn(const std::vector<std::string>& args, int stdout_fd, int stderr_fd = -1) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (stdout_fd >= 0) posix_spawn_file_actions_adddup2(&actions, stdout_fd, STDOUT_FILENO);
  if (stderr_fd >= 0) posix_spawn_file_actions_adddup2(&actions, stderr_fd, STDERR_FILENO);
  pid_t pid = -1;
  const int e = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return e == 0 ? pid : -1;
}

// A server child process that printed "listening on HOST:PORT"; SIGTERMed when destroyed.
class ServerProcess {
 public:
  explicit ServerProcess(const std::vector<std::string>& args) {
    int fds[2];
    if (pipe(fds) != 0) return;
    pid_ = spawn(args, fds[1]);
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
    if (out.starts_with("listening on ") && colon != std::string::npos) {
      port_ = std::stoi(out.substr(colon + 1));
    }
  }
  ~ServerProcess() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    wait_with_deadline(pid_, Clock::now() + kExitGrace);
  }
  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  // Sends SIGTERM now and waits for the exit; returns the exit status (see wait_with_deadline).
  int stop() {
    if (pid_ <= 0) return -1;
    kill(pid_, SIGTERM);
    const int status = wait_with_deadline(pid_, Clock::now() + kExitGrace);
    pid_ = -1;
    return status;
  }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
};

struct LoadRun {
  int exit_status = -1;
  nlohmann::json report;
  std::string out;  // its stdout: the summary
  std::string err;  // its stderr: log lines and command-line errors
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Runs wheel-load to completion with `args` and reads its --json report. A run that does not
// end within `expected` (its --duration and start-up) plus kExitGrace is killed and fails.
// `during`, if given, is called with wheel-load's pid right after it started.
inline LoadRun run_wheel_load(std::vector<std::string> args,
                              std::chrono::seconds expected = std::chrono::seconds(10),
                              const std::function<void(pid_t)>& during = {}) {
  static int counter = 0;
  const std::string base = testing::TempDir() + "wheel_load_" + std::to_string(getpid()) + "_" +
                           std::to_string(counter++);
  std::string json_path = base + ".json";
  const std::string out_path = base + ".out", err_path = base + ".err";
  args.insert(args.begin(), WHEEL_LOAD_PATH);
  // A --json the caller gave is read, and left for the caller to remove.
  bool own_json = true;
  if (const auto it = std::find(args.begin(), args.end(), "--json"); it == args.end()) {
    std::remove(json_path.c_str());
    args.insert(args.end(), {"--json", json_path});
  } else if (it + 1 != args.end()) {
    json_path = *(it + 1);
    own_json = false;
  }
  if (std::find(args.begin(), args.end(), "--log-level") == args.end()) {
    args.insert(args.end(), {"--log-level", "warn"});
  }
  LoadRun run;
  const int out_fd = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  const int err_fd = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  const pid_t pid = spawn(args, out_fd, err_fd);
  close(out_fd);
  close(err_fd);
  if (pid <= 0) return run;
  if (during) during(pid);
  run.exit_status = wait_with_deadline(pid, Clock::now() + expected + kExitGrace);
  std::ifstream in(json_path);
  if (in) run.report = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  run.out = slurp(out_path);
  run.err = slurp(err_path);
  for (const auto& p : {out_path, err_path}) std::remove(p.c_str());
  if (own_json) std::remove(json_path.c_str());
  return run;
}

// Established IPv4 connections whose local port is `port` (the server's ends), from /proc.
inline int established_to(int port) {
  std::ifstream in("/proc/net/tcp");
  std::string line;
  std::getline(in, line);  // header
  int count = 0;
  char local_port[8];
  unsigned state = 0;
  while (std::getline(in, line)) {
    // "  sl  local_address rem_address   st ...": local is ADDR:PORT in hex, st is 01 when open
    if (std::sscanf(line.c_str(), " %*d: %*8[0-9A-F]:%4[0-9A-F] %*8[0-9A-F]:%*4[0-9A-F] %x",
                    local_port, &state) == 2 &&
        std::stoi(local_port, nullptr, 16) == port && state == 1) {
      ++count;
    }
  }
  return count;
}

// A loopback port with nothing listening on it (bound then released).
inline int unused_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

inline std::vector<std::string> load_args(int port, const char* connections, const char* expect,
                                          const char* duration) {
  return {"--port",
          std::to_string(port),
          "--connections",
          connections,
          "--active-ratio",
          "0.5",
          "--ping-interval",
          "200ms",
          "--expect-idle-close",
          expect,
          "--duration",
          duration,
          "--connect-rate",
          "2000",
          "--source-addresses",
          "127.0.0.1-127.0.0.4"};
}

// Every idle connection closed on time, every active one survived and timed its PONGs.
inline void expect_all_held(const LoadRun& run, int connections) {
  ASSERT_TRUE(run.report.is_object()) << "no JSON report";
  const auto& r = run.report;
  EXPECT_EQ(run.exit_status, 0) << r.dump(2);
  EXPECT_TRUE(r["ok"].get<bool>()) << r["failures"].dump();
  EXPECT_EQ(r["connections_established"], connections);
  EXPECT_EQ(r["connect_errors"], 0);
  EXPECT_EQ(r["active"]["count"], connections / 2);
  EXPECT_EQ(r["active"]["survived"], connections / 2);
  EXPECT_EQ(r["idle"]["count"], connections / 2);
  EXPECT_EQ(r["idle"]["closed_on_time"], connections / 2);
  EXPECT_EQ(r["idle"]["never_closed"], 0);
  EXPECT_FALSE(r["rtt_ms"]["p50"].is_null());
  EXPECT_FALSE(r["rtt_ms"]["p99"].is_null());
  EXPECT_GT(r["pongs_received"].get<long>(), 0);
  EXPECT_FALSE(r["idle"]["lateness_ms"]["max"].is_null());
}

// Calls `done` every 10 ms until it returns true or `limit` passes; returns its last answer.
inline bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  while (!done()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

// The state letter of /proc/PID/stat ('R', 'S', 'Z', ...), or 0 when there is no such process.
inline char process_state(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return 0;
  const auto paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() ? 0 : stat[paren + 2];
}

// A process that is gone or a zombie: it runs no more.
inline bool process_ended(pid_t pid) {
  const char state = process_state(pid);
  return state == 0 || state == 'Z' || state == 'X';
}

// The pids whose parent is `parent`, from /proc/*/stat.
inline std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "stat");
    std::string stat;
    if (!std::getline(in, stat)) continue;
    const auto paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    char state = 0;
    int ppid = 0;
    if (std::sscanf(stat.c_str() + paren + 1, " %c %d", &state, &ppid) == 2 && ppid == parent) {
      out.push_back(std::stoi(name));
    }
  }
  return out;
}

}  // namespace wheel_load_test
