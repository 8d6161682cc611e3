// SPDX-License-Identifier: Apache-2.0
// The process_* metrics and wheel_build_info (server/process_metrics.h), in process: this test
// process and children it forks are the processes measured, so every figure has a known truth
// (descriptors it opens, CPU time it burns, a child's start and death).
#include "wheel/server/process_metrics.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>
#include <chrono>
#include <ctime>
#include <optional>
#include <vector>

#include "support/prometheus_parser.h"
#include "wheel/server/server_metrics.h"
#include "wheel/version.h"

namespace {

using wheel::server::ProcessSample;
using wheel::server::read_process_sample;
using wheel::server::sample_process_tree;

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

double own_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// Spins until this process has used `seconds` more CPU time (30 s of wall time at most).
void burn_cpu(double seconds) {
  const double until = own_cpu_seconds() + seconds;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  volatile std::uint64_t sink = 0;
  while (own_cpu_seconds() < until && std::chrono::steady_clock::now() < give_up) {
    for (int i = 0; i < 100000; ++i) sink = sink + static_cast<std::uint64_t>(i);
  }
}

// A child that burns `cpu` seconds, then waits until the pipe `release` is readable (or closed),
// and exits 0.
pid_t spawn_child(double cpu, const int release[2]) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(release[1]);  // so that the parent's close is our end of file
    burn_cpu(cpu);
    char byte;
    [[maybe_unused]] const ssize_t n = ::read(release[0], &byte, 1);
    ::_exit(0);
  }
  return pid;
}

TEST(ProcessMetrics, ReadsThisProcess) {
  const auto s = read_process_sample(0);
  ASSERT_TRUE(s.has_value());
  EXPECT_GT(s->resident_bytes, 0u);
  EXPECT_GE(s->virtual_bytes, s->resident_bytes);
  rlimit limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &limit), 0);
  EXPECT_EQ(s->max_fds, limit.rlim_cur);
  EXPECT_GE(s->open_fds, 3u);  // stdin, stdout, stderr at least
  EXPECT_LE(s->start_time_seconds, now_seconds() + 1.0);
  EXPECT_GT(s->start_time_seconds, now_seconds() - 24 * 3600.0);
  EXPECT_FALSE(read_process_sample(-5).has_value()) << "no such process";
}

TEST(ProcessMetrics, OpenFdsCountsExactlyTheDescriptorsOpened) {
  const auto before = read_process_sample(0);
  ASSERT_TRUE(before);
  std::vector<int> fds;
  for (int i = 0; i < 8; ++i) {
    int p[2];
    ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
    fds.push_back(p[0]);
    fds.push_back(p[1]);
  }
  const auto during = read_process_sample(0);
  for (const int fd : fds) ::close(fd);
  const auto after = read_process_sample(0);
  ASSERT_TRUE(during && after);
  EXPECT_EQ(during->open_fds, before->open_fds + 16);
  EXPECT_EQ(after->open_fds, before->open_fds);
}

TEST(ProcessMetrics, CpuSecondsFollowTheCpuTimeUsed) {
  const auto before = read_process_sample(0);
  burn_cpu(0.3);
  const auto after = read_process_sample(0);
  ASSERT_TRUE(before && after);
  // Clock ticks (10 ms) of granularity: at least 0.25 s more, never less.
  EXPECT_GE(after->cpu_seconds - before->cpu_seconds, 0.25);
}

TEST(ProcessMetrics, AChildStartsWithinTheTestAndItsTreeSumsIt) {
  int release[2];
  ASSERT_EQ(::pipe2(release, O_CLOEXEC), 0);
  const double before_fork = now_seconds();
  const pid_t child = spawn_child(0.3, release);
  ASSERT_GT(child, 0);
  ::close(release[0]);
  // Wait until it has burned its CPU (bounded: 30 s).
  std::optional<ProcessSample> c;
  for (int i = 0; i < 300; ++i) {
    c = read_process_sample(child);
    if (c && c->cpu_seconds >= 0.25) break;
    ::usleep(100'000);
  }
  ASSERT_TRUE(c);
  ASSERT_GE(c->cpu_seconds, 0.25);
  // btime has whole seconds, the start a clock tick: a second of slack each way.
  EXPECT_GE(c->start_time_seconds, before_fork - 1.5);
  EXPECT_LE(c->start_time_seconds, now_seconds() + 1.5);

  const pid_t pids[] = {child};
  const ProcessSample self = read_process_sample(0).value();
  const ProcessSample live = sample_process_tree(pids);
  EXPECT_GE(live.cpu_seconds, self.cpu_seconds + self.reaped_children_cpu_seconds + 0.25);
  EXPECT_GE(live.open_fds, self.open_fds + c->open_fds - 1);  // the test's fds may move by one
  EXPECT_GT(live.resident_bytes, self.resident_bytes);
  EXPECT_EQ(live.max_fds, self.max_fds);
  EXPECT_EQ(live.start_time_seconds, self.start_time_seconds) << "the supervisor's start";

  // It exits: as a zombie it still counts; reaped, its CPU moves to our cutime. The tree's CPU
  // seconds never go down (a worker's death must not reset the counter).
  ::close(release[1]);
  siginfo_t info{};
  ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOWAIT), 0);
  const ProcessSample zombie = sample_process_tree(pids);
  EXPECT_GE(zombie.cpu_seconds, live.cpu_seconds);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  const ProcessSample reaped = sample_process_tree({});  // the supervisor forgets its pid
  EXPECT_GE(reaped.cpu_seconds, zombie.cpu_seconds);
  EXPECT_GE(reaped.reaped_children_cpu_seconds, 0.25);
}

TEST(ProcessMetrics, RendersTheStandardFamilies) {
  const ProcessSample s{.cpu_seconds = 1.25,
                        .resident_bytes = 4096,
                        .virtual_bytes = 8192,
                        .open_fds = 7,
                        .max_fds = 1024,
                        .start_time_seconds = 1795481723.5};
  const auto e = wheel::testing::parse_exposition(wheel::server::render_process_metrics(s));
  struct Family {
    const char* name;
    double value;
    const char* type;
  };
  for (const Family& f : {Family{"process_cpu_seconds_total", 1.25, "counter"},
                          {"process_resident_memory_bytes", 4096, "gauge"},
                          {"process_virtual_memory_bytes", 8192, "gauge"},
                          {"process_open_fds", 7, "gauge"},
                          {"process_max_fds", 1024, "gauge"},
                          {"process_start_time_seconds", 1795481723.5, "gauge"}}) {
    EXPECT_EQ(e.value(f.name), f.value) << f.name;
    EXPECT_EQ(e.families.at(f.name).type, f.type) << f.name;
  }
}

TEST(ProcessMetrics, BuildInfoCarriesTheVersion) {
  const auto e = wheel::testing::parse_exposition(
      wheel::server::render_server_metrics(wheel::server::ServerMetricsValues{}, 1));
  EXPECT_EQ(e.value("wheel_build_info", {{"version", wheel::kVersion}}), 1);
  EXPECT_EQ(e.families.at("wheel_build_info").type, "gauge");
  EXPECT_EQ(e.families.at("wheel_build_info").samples.size(), 1u);
}

}  // namespace
