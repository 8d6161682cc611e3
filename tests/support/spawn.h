// SPDX-License-Identifier: Apache-2.0
// Test support: starting a program that cannot outlive the test that started it. A test killed
// by ctest's timeout gets SIGKILL, so no destructor stops the redis-server, beanstalkd,
// wheel-jobs or wheel-server it started; they would keep running and hold their ports. Each
// child therefore asks the kernel for SIGKILL when its parent dies (prctl PR_SET_PDEATHSIG),
// which posix_spawn cannot do: this is fork, prctl, exec.
//
// PR_SET_PDEATHSIG fires when the *thread* that forked exits, not when the process does: a
// child started from a short-lived std::thread would be killed as soon as that thread ends.
// spawn_tied() therefore runs only on the process's main thread, where GoogleTest runs every
// test; anywhere else it fails the test and starts nothing.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <string>
#include <vector>

extern char** environ;

namespace wheel_test {

// What the child gets besides its arguments; -1 / 0 leave the test's own.
struct SpawnOptions {
  int stdout_fd = -1;           // made the child's stdout
  int stderr_fd = -1;           // made the child's stderr
  rlim_t open_files_limit = 0;  // > 0: the child's RLIMIT_NOFILE, soft and hard
};

// Starts the program at the path args[0] (PATH is not searched) with `args` and this process's
// environment, as a child that is SIGKILLed when this process dies. A program that cannot be
// started exits 127. Returns the child's pid (the caller reaps it), or -1 when fork fails or
// this is not the main thread. Main thread only (see above).
inline pid_t spawn_tied(const std::vector<std::string>& args, const SpawnOptions& options = {}) {
  if (args.empty()) return -1;
  if (::gettid() != ::getpid()) {
    ADD_FAILURE() << "spawn_tied(" << args[0] << ") off the main thread: PR_SET_PDEATHSIG "
                  << "would kill the child when this thread ends";
    return -1;
  }
  // Everything the child needs is made before fork: a multi-threaded parent's child may call
  // only async-signal-safe functions until exec (no allocation, no locks).
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const rlimit limit{options.open_files_limit, options.open_files_limit};
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) ::_exit(127);
  // The parent may have died between fork and prctl: then no signal will ever come.
  if (::getppid() != parent) ::_exit(127);
  if (options.stdout_fd >= 0 && ::dup2(options.stdout_fd, STDOUT_FILENO) < 0) ::_exit(127);
  if (options.stderr_fd >= 0 && ::dup2(options.stderr_fd, STDERR_FILENO) < 0) ::_exit(127);
  if (options.open_files_limit > 0 && ::setrlimit(RLIMIT_NOFILE, &limit) != 0) ::_exit(127);
  ::execve(argv[0], argv.data(), environ);
  ::_exit(127);
}

}  // namespace wheel_test
