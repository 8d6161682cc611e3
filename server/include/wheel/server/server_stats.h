// SPDX-License-Identifier: Apache-2.0
// The counters of one server (one worker): a snapshot that STATS sends as JSON and the
// periodic log line prints.
#pragma once

#include <cstdint>
#include <string>

#include "wheel/net/tcp_server_counters.h"

namespace wheel::server {

// The TCP server's counts (net::TcpServerCounters: connections open, accepted, rejected by
// max-connections or for lack of descriptors, accept errors, slow consumers, closing, grace
// expired, stale timeouts, bytes in and out) and the line protocol's own. stale_timeouts also
// counts the DELAYs that came due after their connection closed.
struct ServerStats : net::TcpServerCounters {
  int worker = 0;
  std::int64_t pid = 0;               // the process serving this worker
  std::uint64_t idle_closed = 0;      // closed by reader-idle or all-idle
  std::uint64_t pings = 0;            // PING commands answered
  std::uint64_t heartbeats = 0;       // PINGs sent by writer-idle
  std::uint64_t delayed_pending = 0;  // DELAY messages scheduled, not yet delivered
  std::uint64_t delayed_sent = 0;
  std::uint64_t delayed_bytes = 0;    // text bytes of the pending DELAY messages
  std::uint64_t delayed_refused = 0;  // DELAYs refused by the count or byte bounds
  std::uint64_t errors = 0;           // ERR replies of any kind

  // One line of JSON: {"worker":0,"connections":...}. Safe from any thread.
  std::string to_json() const;
  // "key=value ..." for log lines. Safe from any thread.
  std::string to_log_string() const;
};

}  // namespace wheel::server
