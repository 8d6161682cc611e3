// SPDX-License-Identifier: Apache-2.0
// The standard process_* metrics that every Prometheus client library exports (CPU seconds,
// resident and virtual memory, open and maximum descriptors, start time), read from Linux's
// /proc, and wheel_build_info. Names and meanings as the client libraries define them:
//   process_cpu_seconds_total      user + system CPU time, seconds (counter)
//   process_resident_memory_bytes  resident set size, bytes
//   process_virtual_memory_bytes   virtual memory size, bytes
//   process_open_fds               open file descriptors
//   process_max_fds                the soft RLIMIT_NOFILE
//   process_start_time_seconds     start time, seconds since the Unix epoch
//
// With --workers the service is a process tree; ProcessTreeSampler sums it (see its contract).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace wheel::server {

// One process's figures, or a process tree's sum.
struct ProcessSample {
  double cpu_seconds = 0;                  // utime + stime
  double reaped_children_cpu_seconds = 0;  // cutime + cstime: children it has waited for
  std::uint64_t resident_bytes = 0;
  std::uint64_t virtual_bytes = 0;
  std::uint64_t open_fds = 0;
  std::uint64_t max_fds = 0;
  double start_time_seconds = 0;  // since the Unix epoch
};

// Reads /proc/PID/{stat,fd,limits} (pid 0: this process). Empty when the process is gone or
// its stat cannot be read; open_fds and max_fds are 0 when only those cannot (a zombie).
// Safe from any thread.
std::optional<ProcessSample> read_process_sample(pid_t pid);

// The sum over a supervisor (this process) and its live workers, as one service:
//   cpu: the supervisor's own + its reaped children's (cutime/cstime: a worker that died and was
//     waited for keeps counting there) + each live worker's. So the counter never goes down
//     when a worker dies and is restarted (REQUIRES: the caller reaps a worker before it
//     forgets its pid, as a supervisor does; a zombie's /proc still reads).
//   resident, virtual memory, open fds: summed (pages shared after fork count once per process,
//     as `ps` adds them up: an upper bound of the tree's memory).
//   max fds: the supervisor's limit (each worker inherits it; a per-process limit, not a sum).
//   start time: the supervisor's (the service's start; a restarted worker does not reset it).
// A worker whose /proc cannot be read is skipped. Safe from any thread.
ProcessSample sample_process_tree(std::span<const pid_t> workers);

// process_* families (HELP, TYPE, sample) for `s`, in the Prometheus text format 0.0.4.
std::string render_process_metrics(const ProcessSample& s);

// wheel_build_info{version="<wheel::kVersion>"} 1, with its HELP and TYPE (gauge). Served by
// wheel-server and wheel-jobs alike.
std::string render_build_info();

}  // namespace wheel::server
