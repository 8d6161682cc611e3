// SPDX-License-Identifier: Apache-2.0
// wheel-jobs at scale, over real sockets (the program as a child process, WHEEL_JOBS_PATH):
// ~15,000 clients blocked in reserve (as many as RLIMIT_NOFILE's hard limit allows both
// processes, raised by the test; 100,000 sessions are tested in-process in jobs_scale_test.cc)
// and 10,000 tubes. Memory is the server's RSS (/proc/PID/status), reported per client and per
// tube. Every wait is bounded and generous: nothing depends on the scheduler being prompt.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "support/beanstalk_client.h"
#include "support/child_process.h"
#include "support/wheel_jobs_process.h"

namespace {

using wheel_test::Client;
using wheel_test::ServerProcess;
using Clock = std::chrono::steady_clock;

// The server's resident set in KiB; 0 when /proc does not say.
long rss_kib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return 0;
}

// Waits (bounded) until the server's stats contain `field`; returns the last stats.
std::string wait_for_stat(Client& c, const std::string& field, std::chrono::seconds bound) {
  std::string stats;
  const auto deadline = Clock::now() + bound;
  while (Clock::now() < deadline) {
    stats = c.yaml("stats\r\n");
    if (stats.find(field) != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return stats;
}

// Raises our soft RLIMIT_NOFILE to the hard limit (the server, spawned after, inherits it).
// Returns the new soft limit.
rlim_t raise_fd_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  limit.rlim_cur = limit.rlim_max;
  setrlimit(RLIMIT_NOFILE, &limit);
  getrlimit(RLIMIT_NOFILE, &limit);
  return limit.rlim_cur;
}

class WheelJobsScaleTest : public wheel_test::WheelJobsProcessTest {};

TEST_F(WheelJobsScaleTest, FifteenThousandClientsBlockedInReserveOnePutWakesTheFirst) {
  const rlim_t fds = raise_fd_limit();
  // Each process holds one fd per client plus a few; leave both some room.
  const std::size_t n = std::min<std::size_t>(15'000, fds > 500 ? fds - 500 : 0);
  if (n < 1'000) GTEST_SKIP() << "RLIMIT_NOFILE hard limit " << fds << " is too low";
  start();
  Client admin(server->port());
  ASSERT_TRUE(admin.connected());
  ASSERT_NE(wait_for_stat(admin, "current-connections: 1\n", std::chrono::seconds(10)), "");
  const long before = rss_kib(server->pid());

  std::vector<std::unique_ptr<Client>> waiters;
  waiters.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    waiters.push_back(std::make_unique<Client>(server->port()));
    ASSERT_TRUE(waiters.back()->connected()) << "client " << i;
    // Half wait for ever, half up to an hour: both kinds hold a blocked reserve.
    waiters.back()->send(i % 2 == 0 ? "reserve\r\n" : "reserve-with-timeout 3600\r\n");
    // The first must be first in line: wait until the server has it before sending more.
    if (i == 0) {
      ASSERT_NE(wait_for_stat(admin, "current-waiting: 1\n", std::chrono::seconds(30))
                    .find("current-waiting: 1\n"),
                std::string::npos);
    }
  }
  const std::string want = "current-waiting: " + std::to_string(n) + "\n";
  const std::string stats = wait_for_stat(admin, want, std::chrono::seconds(120));
  ASSERT_NE(stats.find(want), std::string::npos) << stats;
  const long after = rss_kib(server->pid());
  if (before > 0 && after > before) {
    const long per_client = (after - before) * 1024 / static_cast<long>(n);
    std::printf("wheel-jobs RSS per client blocked in reserve: %ld bytes (%zu clients)\n",
                per_client, n);
    RecordProperty("rss_bytes_per_blocked_client", std::to_string(per_client));
    EXPECT_LE(per_client, 16 * 1024) << "a blocked client should cost a few KiB at most";
  }

  // One put: exactly the first waiter hears RESERVED; nobody else hears anything.
  ASSERT_EQ(admin.ask("put 0 0 60 3\r\njob\r\n"), "INSERTED 1");
  EXPECT_EQ(waiters[0]->line(30'000), "RESERVED 1 3");
  std::vector<pollfd> polls;
  for (std::size_t i = 1; i < n; ++i) polls.push_back({waiters[i]->fd(), POLLIN, 0});
  EXPECT_EQ(poll(polls.data(), polls.size(), 500), 0) << "another waiter heard something";

  // They all hang up: nothing stays behind.
  waiters.clear();
  const std::string gone =
      wait_for_stat(admin, "current-connections: 1\n", std::chrono::seconds(120));
  EXPECT_NE(gone.find("current-connections: 1\n"), std::string::npos) << gone;
  EXPECT_NE(gone.find("current-waiting: 0\n"), std::string::npos) << gone;
  EXPECT_NE(gone.find("current-jobs-ready: 1\n"), std::string::npos) << gone;  // released
}

TEST_F(WheelJobsScaleTest, TenThousandTubesAreServedAndDroppedWhenEmpty) {
  start();
  Client c(server->port());
  ASSERT_TRUE(c.connected());
  ASSERT_NE(wait_for_stat(c, "current-tubes: 1\n", std::chrono::seconds(10)), "");
  const long before = rss_kib(server->pid());
  constexpr int kTubes = 10'000;
  std::string batch;
  for (int i = 0; i < kTubes; ++i) {
    batch += "use tube-" + std::to_string(i) + "\r\nput 0 0 60 1\r\nx\r\n";
  }
  c.send(batch);
  int inserted = 0;
  for (int i = 0; i < kTubes; ++i) {
    ASSERT_EQ(c.line(30'000), "USING tube-" + std::to_string(i));
    if (c.line(30'000).starts_with("INSERTED ")) inserted++;
  }
  EXPECT_EQ(inserted, kTubes);
  const std::string stats = c.yaml("stats\r\n");
  EXPECT_NE(stats.find("current-tubes: 10001\n"), std::string::npos) << stats;
  const long after = rss_kib(server->pid());
  if (before > 0 && after > before) {
    const long per_tube = (after - before) * 1024 / kTubes;
    std::printf("wheel-jobs RSS per tube with one job: %ld bytes\n", per_tube);
    RecordProperty("rss_bytes_per_tube_with_a_job", std::to_string(per_tube));
    EXPECT_LE(per_tube, 8 * 1024);
  }
  const std::string list = c.yaml("list-tubes\r\n");
  EXPECT_EQ(std::count(list.begin(), list.end(), '\n'), 10'003) << "--- + 10,001 names + CRLF";
  // Deleting every job drops every tube but the used one and "default".
  std::string deletes;
  for (int i = 1; i <= kTubes; ++i) deletes += "delete " + std::to_string(i) + "\r\n";
  c.send(deletes);
  for (int i = 1; i <= kTubes; ++i) ASSERT_EQ(c.line(30'000), "DELETED") << i;
  const std::string after_delete = c.yaml("stats\r\n");
  EXPECT_NE(after_delete.find("current-tubes: 2\n"), std::string::npos) << after_delete;
}

}  // namespace
