// SPDX-License-Identifier: Apache-2.0
// How many processes a run needs: each process may hold only RLIMIT_NOFILE open files, so a
// run with more connections than that is split across child processes (--processes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace wheel::load {

// File descriptors a process keeps for itself besides its connections (stdio, the loop's
// epoll and signal fds, the pipe to the parent, spdlog, slack).
inline constexpr std::uint64_t kReservedFds = 64;

// More would only thrash a small machine; a run needing more is refused.
inline constexpr unsigned kMaxProcesses = 64;

struct ProcessPlan {
  unsigned processes = 1;
  std::size_t max_per_process = 0;  // connections the busiest process opens
};

// Plans `connections` over processes with `fd_limit` open files each. `requested` is the
// --processes value, or std::nullopt for "auto" (the fewest processes that hold the run).
// Throws std::invalid_argument with a message for the user when an explicit number cannot hold
// the run (naming the limit and the number that would), when auto would need more than
// kMaxProcesses, or when `requested` is 0 or above kMaxProcesses.
ProcessPlan plan_processes(std::size_t connections, std::optional<unsigned> requested,
                           std::uint64_t fd_limit);

// Raises this process's soft RLIMIT_NOFILE to its hard limit (children inherit it).
// Returns the soft limit in force afterwards; if raising fails, the unchanged soft limit.
std::uint64_t raise_open_file_limit();

}  // namespace wheel::load
