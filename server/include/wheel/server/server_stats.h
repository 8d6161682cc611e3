// SPDX-License-Identifier: Apache-2.0
// The counters of one server (one worker): a snapshot that STATS sends as JSON and the
// periodic log line prints.
#pragma once

#include <cstdint>
#include <string>

namespace wheel::server {

struct ServerStats {
  int worker = 0;
  std::int64_t pid = 0;               // the process serving this worker
  std::uint64_t connections = 0;      // open now
  std::uint64_t accepted = 0;         // since start, rejected ones excluded
  std::uint64_t rejected_full = 0;    // got "ERR server full"
  std::uint64_t rejected_emfile = 0;  // accepted while out of descriptors: "ERR server full"
  std::uint64_t accept_errors = 0;    // other failed accepts (ENOMEM, ENOBUFS, ...)
  std::uint64_t idle_closed = 0;      // closed by reader-idle or all-idle
  std::uint64_t pings = 0;            // PING commands answered
  std::uint64_t heartbeats = 0;       // PINGs sent by writer-idle
  std::uint64_t delayed_pending = 0;  // DELAY messages scheduled, not yet delivered
  std::uint64_t delayed_sent = 0;
  std::uint64_t delayed_bytes = 0;        // text bytes of the pending DELAY messages
  std::uint64_t delayed_refused = 0;      // DELAYs refused by the count or byte bounds
  std::uint64_t errors = 0;               // ERR replies of any kind
  std::uint64_t slow_consumers = 0;       // closed for exceeding max_output
  std::uint64_t closing = 0;              // closed, still writing their last output (now)
  std::uint64_t close_grace_expired = 0;  // reset: did not read their last output in time
  std::uint64_t stale_timeouts = 0;       // expired after their connection closed: ignored
  std::uint64_t bytes_in = 0;
  std::uint64_t bytes_out = 0;

  // One line of JSON: {"worker":0,"connections":...}. Safe from any thread.
  std::string to_json() const;
  // "key=value ..." for log lines. Safe from any thread.
  std::string to_log_string() const;
};

}  // namespace wheel::server
