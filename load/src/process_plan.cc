// SPDX-License-Identifier: Apache-2.0
#include "wheel/load/process_plan.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <stdexcept>

namespace wheel::load {

ProcessPlan plan_processes(std::size_t connections, std::optional<unsigned> requested,
                           std::uint64_t fd_limit) {
  const std::uint64_t per_process = fd_limit > kReservedFds ? fd_limit - kReservedFds : 0;
  const auto needed = [&]() -> std::uint64_t {
    if (per_process == 0) return UINT64_MAX;
    return (connections + per_process - 1) / per_process;
  }();
  const auto plan = [&](unsigned n) { return ProcessPlan{n, (connections + n - 1) / n}; };
  if (!requested) {
    if (needed > kMaxProcesses) {
      throw std::invalid_argument(
          fmt::format("--processes auto: {} connections need {} processes at {} open files each "
                      "(RLIMIT_NOFILE hard limit {}); at most {} are allowed",
                      connections, needed, per_process, fd_limit, kMaxProcesses));
    }
    return plan(static_cast<unsigned>(std::max<std::uint64_t>(needed, 1)));
  }
  if (*requested == 0 || *requested > kMaxProcesses) {
    throw std::invalid_argument(
        fmt::format("--processes must be 1..{} or auto, not {}", kMaxProcesses, *requested));
  }
  if (needed > *requested) {
    throw std::invalid_argument(fmt::format(
        "--processes {} cannot hold {} connections: each process may open {} files "
        "(RLIMIT_NOFILE hard limit {}, {} kept for itself), so {} connections need at least {} "
        "processes; use --processes auto or --processes {}",
        *requested, connections, fd_limit, fd_limit, kReservedFds, connections, needed, needed));
  }
  return plan(*requested);
}

std::uint64_t raise_open_file_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 1024;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  return limit.rlim_cur == RLIM_INFINITY ? UINT64_MAX : limit.rlim_cur;
}

}  // namespace wheel::load
