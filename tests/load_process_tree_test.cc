// SPDX-License-Identifier: Apache-2.0
// The soak's view of a server through /proc (load/process_tree.h): its children, memory and
// descriptors, and which descriptor changes count as a leak.
#include "wheel/load/process_tree.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

namespace wheel::load {
namespace {

TEST(ProcessTree, FdChangesListGoneAndNewDescriptors) {
  const std::vector<std::string> before = {"10 /dev/null", "10 socket:[1]", "11 pipe:[5]"};
  const std::vector<std::string> after = {"10 /dev/null", "11 pipe:[5]", "11 socket:[9]"};
  const auto changes = fd_changes(before, after, 10);
  EXPECT_EQ(changes, (std::vector<std::string>{"- 10 socket:[1]", "+ 11 socket:[9]"}));
  EXPECT_TRUE(fd_changes(before, before, 10).empty());
}

// libuv's EMFILE reserve: one new /dev/null per worker is no leak; a second one is, and so is
// one in the supervisor (it runs no connection loop).
TEST(ProcessTree, OneNewDevNullPerWorkerIsExcused) {
  const std::vector<std::string> before = {"10 socket:[1]"};
  EXPECT_TRUE(fd_changes(before, {"10 socket:[1]", "11 /dev/null", "12 /dev/null"}, 10).empty());
  EXPECT_EQ(fd_changes(before, {"10 socket:[1]", "11 /dev/null", "11 /dev/null"}, 10).size(), 1U);
  EXPECT_EQ(fd_changes(before, {"10 /dev/null", "10 socket:[1]"}, 10),
            (std::vector<std::string>{"+ 10 /dev/null"}));
}

TEST(ProcessTree, SeesChildrenTheirMemoryAndTheirDescriptors) {
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t parent = getpid();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // pause() below must not outlive a killed test.
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(1);
    open("/dev/null", O_RDONLY);  // a descriptor the parent must see
    [[maybe_unused]] const ssize_t n = write(ready[1], "x", 1);
    pause();
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  const auto pids = process_and_children(getpid());
  ASSERT_FALSE(pids.empty());
  EXPECT_EQ(pids.front(), getpid());
  EXPECT_NE(std::find(pids.begin(), pids.end(), child), pids.end());
  EXPECT_GT(rss_kib({getpid()}), 0U);
  const auto fds = fd_targets({child});
  EXPECT_NE(std::find(fds.begin(), fds.end(), std::to_string(child) + " /dev/null"), fds.end());
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  close(ready[0]);
  close(ready[1]);
  EXPECT_TRUE(process_and_children(child).empty()) << "a reaped process has no tree";
  EXPECT_EQ(rss_kib({child}), 0U);
}

// The big case's gauges: this process used some CPU and has a PSS; the kernel has TCP sockets
// in use once one is open.
TEST(ProcessTree, CpuPssAndKernelMemoryAreRead) {
  volatile double x = 0;
  for (int i = 0; i < 20'000'000; ++i) x = x + 1;  // some CPU time to see
  EXPECT_GT(cpu_seconds({getpid()}), 0.0);
  EXPECT_GT(pss_kib({getpid()}), 0U);
  const KernelMemory k = read_kernel_memory();
  EXPECT_GT(k.slab_kib, 0U);
  EXPECT_EQ(cpu_seconds({}), 0.0);
}

}  // namespace
}  // namespace wheel::load
