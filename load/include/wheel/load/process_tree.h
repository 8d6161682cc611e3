// SPDX-License-Identifier: Apache-2.0
// A process and its direct children (a server's supervisor and workers) seen through /proc:
// their memory and their open descriptors, for the soak's leak checks.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace wheel::load {

// `pid` followed by the pids whose parent is `pid` (ascending). Empty when `pid` is gone.
std::vector<pid_t> process_and_children(pid_t pid);

// Summed VmRSS of `pids` in KiB (a process that vanished counts 0).
std::uint64_t rss_kib(const std::vector<pid_t>& pids);

// One line per open descriptor of `pids`, "<pid> <what it points to>" (readlink of
// /proc/PID/fd/N: "socket:[123]", "/dev/null", "anon_inode:[eventpoll]", ...), sorted.
std::vector<std::string> fd_targets(const std::vector<pid_t>& pids);

// What changed between two fd_targets() lists: "- <line>" for each one gone, "+ <line>" for each
// one new, except one new "/dev/null" per process other than `supervisor` (libuv's reserve
// descriptor for EMFILE, opened once per loop with its first TCP stream and kept: no leak).
std::vector<std::string> fd_changes(const std::vector<std::string>& before,
                                    const std::vector<std::string>& after, pid_t supervisor);

}  // namespace wheel::load
