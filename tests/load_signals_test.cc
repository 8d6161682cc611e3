// SPDX-License-Identifier: Apache-2.0
// wheel-load and signals (issue 22 items 1 and 2): the first SIGINT or SIGTERM stops the run and
// still reports, never leaving a truncated --json file; a second one ends it at once; the child
// processes of --processes die with their parent, however it dies. Every test waits for events
// (connections open at the server, children forked) with generous bounds, never for time.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "load_program_support.h"

using namespace wheel_load_test;

namespace {

constexpr std::chrono::seconds kOpenLimit{30};

// A --json path that already holds a previous report.
std::string previous_report(const std::string& name) {
  const std::string path = testing::TempDir() + name + "_" + std::to_string(getpid()) + ".json";
  std::ofstream(path) << "{\"previous\": true}\n";
  return path;
}

// Arguments for a long run (60 s) that only a signal ends: a server that never closes, so
// every connection stays open until then.
std::vector<std::string> long_run(int port, const char* connections) {
  auto args = load_args(port, connections, "0", "60s");
  *(std::find(args.begin(), args.end(), "--ping-interval") + 1) = "1s";
  return args;
}

// True once the server holds `n` connections and `parent` has `children` children.
bool opened(const ServerProcess& server, int n, pid_t parent, std::size_t children) {
  return wait_until(
      [&] { return established_to(server.port()) >= n && children_of(parent).size() >= children; },
      kOpenLimit);
}

// `args` with --processes `processes`: once the server holds `n` connections and the parent its
// children, the children are noted and the parent gets `signal`.
struct SignalledRun {
  LoadRun run;
  std::vector<pid_t> children;
};
SignalledRun signal_once_open(const ServerProcess& server, std::vector<std::string> args, int n,
                              std::size_t processes, int signal) {
  args.insert(args.end(), {"--processes", std::to_string(processes)});
  SignalledRun out;
  out.run = run_wheel_load(args, std::chrono::seconds(0), [&](pid_t pid) {
    if (!opened(server, n, pid, processes)) return;
    out.children = children_of(pid);
    kill(pid, signal);
  });
  return out;
}

// Each test runs wheel-load against a line server that never closes idle connections.
class LoadSignals : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_GT(server.port(), 0) << "the line server did not start"; }
  ServerProcess server{{LINE_SERVER_PATH, "--port", "0", "--idle-ms", "0"}};
};

}  // namespace

TEST_F(LoadSignals, SigintStopsTheRunAndWritesThePartialReportMarkedInterrupted) {
  const std::string json = previous_report("sigint");
  auto args = long_run(server.port(), "100");
  args.insert(args.end(), {"--json", json, "--processes", "1"});
  bool untouched_while_running = false;
  bool signalled = false;
  const LoadRun run = run_wheel_load(args, std::chrono::seconds(0), [&](pid_t pid) {
    if (!opened(server, 100, pid, 0)) return;
    // The previous report stays whole until the new one replaces it.
    std::ifstream in(json);
    untouched_while_running =
        std::string(std::istreambuf_iterator<char>(in), {}) == "{\"previous\": true}\n";
    kill(pid, SIGINT);
    signalled = true;
  });
  ASSERT_TRUE(signalled) << "the connections did not open: " << run.err;
  EXPECT_TRUE(untouched_while_running) << "--json was truncated before the run ended";
  EXPECT_EQ(run.exit_status, 130) << run.out << run.err;
  ASSERT_TRUE(run.report.is_object()) << "no valid JSON report";
  const auto& r = run.report;
  EXPECT_EQ(r["interrupted"]["signal"], "SIGINT");
  EXPECT_FALSE(r["ok"].get<bool>());
  EXPECT_NE(r["failures"][0].get<std::string>().find("interrupted by SIGINT"), std::string::npos);
  EXPECT_EQ(r["connections_established"], 100);
  EXPECT_EQ(r["active"]["survived"], 50);
  EXPECT_LT(r["duration_s"].get<double>(), 60);
  EXPECT_NE(run.out.find("interrupted by SIGINT"), std::string::npos) << run.out;
  EXPECT_FALSE(std::filesystem::exists(json + ".tmp-" + std::to_string(getpid())));
  std::remove(json.c_str());
}

// Issue 22 item 2 and issue 21 item 7: SIGTERM to the parent of three children reaches them;
// each ends its slice and reports, and the merged report has every connection exactly once.
TEST_F(LoadSignals, SigtermToTheParentStopsEveryChildAndMergesTheirReports) {
  const auto [run, children] =
      signal_once_open(server, long_run(server.port(), "200"), 200, 3, SIGTERM);
  ASSERT_EQ(children.size(), 3U) << "three children with 200 connections did not appear";
  EXPECT_EQ(run.exit_status, 143) << run.out << run.err;
  ASSERT_TRUE(run.report.is_object()) << run.err;
  const auto& r = run.report;
  EXPECT_EQ(r["interrupted"]["signal"], "SIGTERM");
  EXPECT_EQ(r["settings"]["processes"], 3);
  EXPECT_EQ(r["connections_established"], 200);
  EXPECT_EQ(r["connect_errors"], 0) << r["connect_errors_by_kind"].dump();
  EXPECT_EQ(r["active"]["count"], 100);
  EXPECT_EQ(r["active"]["survived"], 100);
  EXPECT_EQ(r["idle"]["count"], 100);
  for (pid_t child : children) EXPECT_TRUE(process_ended(child)) << child;
  EXPECT_TRUE(wait_until([&] { return established_to(server.port()) == 0; }, kOpenLimit));
}

// The children are stopped (SIGSTOP), so the first signal's orderly end cannot finish; the
// second must end everything at once: the parent dies of it, its children are killed, and the
// previous --json is left as it was (no truncated file, no temporary one).
TEST_F(LoadSignals, SecondSignalEndsTheRunAtOnce) {
  const std::string json = previous_report("second");
  auto args = long_run(server.port(), "100");
  args.insert(args.begin(), WHEEL_LOAD_PATH);
  args.insert(args.end(), {"--processes", "2", "--json", json, "--log-level", "error"});
  const int null_fd = open("/dev/null", O_WRONLY);
  const pid_t pid = spawn(args, null_fd, null_fd);
  close(null_fd);
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(opened(server, 100, pid, 2));
  const std::vector<pid_t> children = children_of(pid);
  for (pid_t child : children) kill(child, SIGSTOP);
  // Two different signals: two of one kind may merge into one while pending.
  kill(pid, SIGINT);
  kill(pid, SIGTERM);
  int status = 0;
  if (!wait_until([&] { return waitpid(pid, &status, WNOHANG) == pid; }, kOpenLimit)) {
    for (pid_t p : children) kill(p, SIGKILL);
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    FAIL() << "wheel-load did not end on the second signal";
  }
  // It dies of whichever of the two its handler saw second (the kernel may run them nested).
  EXPECT_TRUE(WIFSIGNALED(status) && (WTERMSIG(status) == SIGTERM || WTERMSIG(status) == SIGINT))
      << "status " << status;
  for (pid_t child : children) {
    EXPECT_TRUE(wait_until([&] { return process_ended(child); }, kOpenLimit)) << child;
  }
  std::ifstream in(json);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "{\"previous\": true}\n");
  EXPECT_FALSE(std::filesystem::exists(json + ".tmp-" + std::to_string(pid)));
  std::remove(json.c_str());
}

// Issue 22 item 2: a parent killed outright (SIGKILL, no handler runs) takes its children with
// it (PR_SET_PDEATHSIG), and their connections close.
TEST_F(LoadSignals, KillingTheParentKillsItsChildren) {
  const auto [run, children] =
      signal_once_open(server, long_run(server.port(), "100"), 100, 2, SIGKILL);
  ASSERT_EQ(children.size(), 2U);
  EXPECT_EQ(run.exit_status, 128 + SIGKILL);
  for (pid_t child : children) {
    EXPECT_TRUE(wait_until([&] { return process_ended(child); }, kOpenLimit))
        << "child " << child << " outlived its parent";
  }
  EXPECT_TRUE(wait_until([&] { return established_to(server.port()) == 0; }, kOpenLimit))
      << established_to(server.port()) << " connections still open";
  for (pid_t child : children) {
    if (!process_ended(child)) kill(child, SIGKILL);  // never leave one behind
  }
}
