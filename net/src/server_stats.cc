#include "wheel/net/server_stats.h"

#include <nlohmann/json.hpp>

namespace wheel::net {

std::string ServerStats::to_json() const {
  const nlohmann::json j = {
      {"worker", worker},
      {"pid", pid},
      {"connections", connections},
      {"accepted", accepted},
      {"rejected_full", rejected_full},
      {"accept_errors", accept_errors},
      {"idle_closed", idle_closed},
      {"pings", pings},
      {"heartbeats", heartbeats},
      {"delayed_pending", delayed_pending},
      {"delayed_sent", delayed_sent},
      {"errors", errors},
      {"slow_consumers", slow_consumers},
      {"stale_timeouts", stale_timeouts},
      {"stale_timeouts", stale_timeouts},
      {"bytes_in", bytes_in},
      {"bytes_out", bytes_out},
  };
  return j.dump();
}

std::string ServerStats::to_log_string() const {
  return "worker=" + std::to_string(worker) + " pid=" + std::to_string(pid) +
         " connections=" + std::to_string(connections) + " accepted=" + std::to_string(accepted) +
         " rejected_full=" + std::to_string(rejected_full) +
         " accept_errors=" + std::to_string(accept_errors) +
         " idle_closed=" + std::to_string(idle_closed) + " pings=" + std::to_string(pings) +
         " heartbeats=" + std::to_string(heartbeats) +
         " delayed_pending=" + std::to_string(delayed_pending) +
         " delayed_sent=" + std::to_string(delayed_sent) + " errors=" + std::to_string(errors) +
         " slow_consumers=" + std::to_string(slow_consumers) +
         " stale_timeouts=" + std::to_string(stale_timeouts) +
         " bytes_in=" + std::to_string(bytes_in) + " bytes_out=" + std::to_string(bytes_out);
}

}  // namespace wheel::net
