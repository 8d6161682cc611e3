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

// Summed Pss of `pids` in KiB (shared pages split between the processes; smaps_rollup).
std::uint64_t pss_kib(const std::vector<pid_t>& pids);

// CPU seconds (user + system) `pids` have used so far.
double cpu_seconds(const std::vector<pid_t>& pids);

// The kernel's side of the connections: Slab (KiB, /proc/meminfo), the memory charged to TCP
// sockets (KiB, /proc/net/sockstat's "mem" pages) and TCP sockets in use (sockstat "inuse").
struct KernelMemory {
  std::uint64_t slab_kib = 0;
  std::uint64_t tcp_kib = 0;
  std::uint64_t tcp_inuse = 0;
};
KernelMemory read_kernel_memory();

// One line per open descriptor of `pids`, "<pid> <what it points to>" (readlink of
// /proc/PID/fd/N: "socket:[123]", "/dev/null", "anon_inode:[eventpoll]", ...), sorted.
std::vector<std::string> fd_targets(const std::vector<pid_t>& pids);

// What changed between two fd_targets() lists: "- <line>" for each one gone, "+ <line>" for each
// one new, except one new "/dev/null" per process other than `supervisor` (libuv's reserve
// descriptor for EMFILE, opened once per loop with its first TCP stream and kept: no leak).
std::vector<std::string> fd_changes(const std::vector<std::string>& before,
                                    const std::vector<std::string>& after, pid_t supervisor);

}  // namespace wheel::load
