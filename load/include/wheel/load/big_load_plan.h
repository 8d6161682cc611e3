// SPDX-License-Identifier: Apache-2.0
// The plan of the big case (scripts/big-load.sh, wheel-big-load; not in CI): N connections on
// this machine against wheel-server --workers W, planned so that all N are open at once for a
// while and every idle close is checked before the end:
//   ramp         = ceil(N / connect_rate)                 (all connections opened)
//   reader idle  = ramp + max(20 s, ramp / 2)              (the first idle close comes after it)
//   duration     = reader idle + ramp + 10 s               (the last idle close is checked)
//   PING period  = max(1 s, reader idle / 3)               (active connections survive)
//   workers      = ceil(N / (open files - 100)) + 5 % + 1  (SO_REUSEPORT spreads by hash)
//   addresses    = ceil(N / per address), at least 2: 5,000 per source address (the kernel's
//                  port search in connect() slows as an address fills), or a fifth of the
//                  ephemeral range when it is under 25,000 ports
// and the idle window, from 5 s after the ramp to 5 s before the first idle close, in which the
// server's CPU and memory are measured.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace wheel::load {

// What limits the run on this machine.
struct MachineLimits {
  std::uint64_t open_files = 1024;  // per process, after raising the soft limit to the hard one
  std::uint64_t ports = 28'232;     // ephemeral ports per source address (ip_local_port_range)
  std::uint64_t file_max = 0;       // fs.file-max
  std::uint64_t files_in_use = 0;   // fs.file-nr's first field
};

// Reads them from /proc (open_files from the current soft RLIMIT_NOFILE).
MachineLimits read_machine_limits();

struct BigLoadRequest {
  std::size_t connections = 100'000;  // 1,000 .. 2,000,000
  double connect_rate = 5000;
  double active_ratio = 0.1;
  // Unset: planned as in the file comment.
  std::optional<std::chrono::seconds> reader_idle, duration, ping_interval;
  std::optional<unsigned> workers;
};

struct BigLoadPlan {
  std::chrono::seconds ramp{}, reader_idle{}, duration{}, ping_interval{};
  std::uint64_t per_worker = 0;  // --max-connections of each server worker
  unsigned workers_needed = 0;   // the fewest workers that hold the run
  unsigned workers = 0;
  unsigned addresses = 0;  // 127.0.0.1 .. 127.0.0.<addresses>
  std::string sources;     // "127.0.0.1-127.0.0.N", wheel-load's --source-addresses
  std::uint64_t files_needed = 0;
  // The idle window, from wheel-load's start; empty (from >= to) when the run is too short.
  std::chrono::seconds window_from{}, window_to{};
};

// Plans the run. Throws std::invalid_argument saying which limit refuses it and by how much:
// connections outside 1,000..2,000,000, a connect rate not above 0, more than 250 source
// addresses, fewer workers than needed or more than 256, or more descriptors than fs.file-max
// leaves free.
BigLoadPlan plan_big_load(const BigLoadRequest& request, const MachineLimits& limits);

}  // namespace wheel::load
