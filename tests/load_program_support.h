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

#include "support/child_process.h"
#include "support/free_port.h"
#include "support/wait_until.h"

namespace wheel_load_test {

using wheel_test::Clock;
using wheel_test::kExitGrace;
using wheel_test::ServerProcess;
using wheel_test::spawn;
using wheel_test::wait_with_deadline;

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
  return wheel_test::free_port();
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

// Calls `done` every 10 ms (each try reads /proc) until it returns true or `limit` passes.
inline bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  return wheel_test::wait_until(done, limit, std::chrono::milliseconds(10));
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
