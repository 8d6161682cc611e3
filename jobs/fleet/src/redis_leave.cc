// SPDX-License-Identifier: Apache-2.0
// RedisBackend's graceful leave: what a node stopped with SIGTERM does before it exits.
#include <spdlog/spdlog.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "redis_handler_client.h"
#include "wheel/jobs/fleet/redis_backend.h"
#include "wheel/logger.h"

namespace wheel::jobs {

// A graceful leave (SIGTERM): the jobs this node's clients hold go back to ready at once, in
// scripts guarded by their fencing tokens, so that other nodes deliver them without waiting for
// their TTR; then the Redis clients stop once nothing is in flight (a claim that was running
// gives its job back from claimed()). With Redis down the scripts fail at once and the leases
// run out, as after a crash.
void RedisBackend::leave() {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> leases;
  for (auto& [conn, client] : clients_) {
    for (auto& [id, lease] : client->leases) leases.emplace_back(id, lease.token);
    client->leases.clear();
  }
  if (leases.empty()) return stop_when_idle();
  const std::size_t held = leases.size();
  store_.give_back(leases, [this, held](ChangeResult&& r) {
    if (r.status == StoreStatus::kOk) {
      counters_.given_back += static_cast<std::uint64_t>(r.value);
      metrics_.changes[static_cast<std::size_t>(ChangeCounter::kHangUp)] +=
          static_cast<std::uint64_t>(r.value);
      logger()->info(
          "wheel-jobs: leaving: {} of the {} jobs held by this node's clients are ready "
          "again (the rest had run out or passed on)",
          r.value, held);
    } else {
      logger()->warn(
          "wheel-jobs: leaving: could not give back the {} jobs held by this node's "
          "clients ({}); they are ready again when their TTR runs out",
          held, r.error);
    }
    stop_when_idle();
  });
}

void RedisBackend::stop_when_idle() {
  // A PING answers after everything sent before it; once none is left, stop.
  store_.link().command({"PING", store_.shard_prefix(0) + "j"}, [this](const RedisValue&) {
    if (store_.link().in_flight() > 0) return stop_when_idle();
    if (shutdown_also_) shutdown_also_();
  });
}

}  // namespace wheel::jobs
