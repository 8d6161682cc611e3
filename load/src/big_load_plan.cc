// SPDX-License-Identifier: Apache-2.0
#include "wheel/load/big_load_plan.h"

#include <sys/resource.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <stdexcept>

namespace wheel::load {
namespace {

// Each server worker (and each wheel-load process) keeps about this many descriptors for
// itself: listener, loop, timer, logs.
constexpr std::uint64_t kOwnFds = 100;
constexpr unsigned kMaxWorkers = 256;
constexpr unsigned kMaxAddresses = 250;  // 127.0.0.1 .. 127.0.0.250

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) {
  return (a + b - 1) / b;
}

}  // namespace

MachineLimits read_machine_limits() {
  MachineLimits m;
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    m.open_files = limit.rlim_cur;
  }
  std::uint64_t lo = 0, hi = 0;
  if (std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range"); in >> lo >> hi && hi >= lo) {
    m.ports = hi - lo + 1;
  }
  std::ifstream("/proc/sys/fs/file-max") >> m.file_max;
  std::ifstream("/proc/sys/fs/file-nr") >> m.files_in_use;
  return m;
}

BigLoadPlan plan_big_load(const BigLoadRequest& r, const MachineLimits& m) {
  using std::chrono::seconds;
  if (r.connections < 1000 || r.connections > 2'000'000) {
    throw std::invalid_argument(
        fmt::format("connections must be 1000 to 2000000, not {}", r.connections));
  }
  if (!(r.connect_rate > 0)) throw std::invalid_argument("the connect rate must be above 0");
  if (m.open_files <= kOwnFds) {
    throw std::invalid_argument(
        fmt::format("{} open files per process leave none for "
                    "connections",
                    m.open_files));
  }
  BigLoadPlan p;
  const auto n = static_cast<std::uint64_t>(r.connections);
  p.ramp = seconds(static_cast<std::int64_t>(std::ceil(static_cast<double>(n) / r.connect_rate)));
  const seconds margin = std::max(p.ramp / 2, seconds(20));
  p.reader_idle = r.reader_idle.value_or(p.ramp + margin);
  p.duration = r.duration.value_or(p.reader_idle + p.ramp + seconds(10));
  p.ping_interval = r.ping_interval.value_or(std::max(p.reader_idle / 3, seconds(1)));
  p.per_worker = m.open_files - kOwnFds;
  p.workers_needed = static_cast<unsigned>(ceil_div(n, p.per_worker));
  p.workers = r.workers.value_or(p.workers_needed + p.workers_needed / 20 + 1);
  const std::uint64_t per_address =
      m.ports < 25'000 ? std::max<std::uint64_t>(m.ports / 5, 1) : 5000;
  p.addresses = static_cast<unsigned>(std::max<std::uint64_t>(2, ceil_div(n, per_address)));
  p.sources = fmt::format("127.0.0.1-127.0.0.{}", p.addresses);
  // Both ends of every connection are descriptors, plus the processes' own.
  p.files_needed = 2 * n + kOwnFds * (p.workers + p.workers_needed + 2);
  p.window_from = p.ramp + seconds(5);
  p.window_to = p.reader_idle - seconds(5);
  if (p.addresses > kMaxAddresses) {
    throw std::invalid_argument(fmt::format(
        "{} source addresses do not fit in 127.0.0.1-127.0.0.{}", p.addresses, kMaxAddresses));
  }
  if (p.workers < p.workers_needed || p.workers > kMaxWorkers) {
    throw std::invalid_argument(
        fmt::format("{} workers cannot hold {} connections (need {}, at most {})", p.workers, n,
                    p.workers_needed, kMaxWorkers));
  }
  if (m.file_max > 0 && m.files_in_use + p.files_needed >= m.file_max) {
    throw std::invalid_argument(
        fmt::format("{} more descriptors would pass fs.file-max {} ({} in use)", p.files_needed,
                    m.file_max, m.files_in_use));
  }
  return p;
}

}  // namespace wheel::load
