// SPDX-License-Identifier: Apache-2.0
#include "fresh_process.h"

#include <spawn.h>
#include <sys/wait.h>

#include <stdexcept>
#include <vector>

extern char** environ;

namespace wheel::bench {

void run_memory_in_fresh_process(const BenchOptions& o, const std::string& impl,
                                 std::int64_t tick_ms) {
  std::vector<std::string> args = {"wheel-bench",
                                   "--impl",
                                   impl,
                                   "--metrics",
                                   "memory",
                                   "--ticks",
                                   std::to_string(tick_ms),
                                   "--n",
                                   std::to_string(o.n),
                                   "--wheel",
                                   std::to_string(o.wheel),
                                   "--memory-child"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv.data(), environ) != 0) {
    throw std::runtime_error("memory: cannot start /proc/self/exe");
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error("memory: the child process failed");
  }
}

}  // namespace wheel::bench
