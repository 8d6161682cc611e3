// SPDX-License-Identifier: Apache-2.0
// TcpServerCounters: what a TcpServer counts of its connections (the handler counts its
// protocol's own events). Plain data, a snapshot.
#pragma once

#include <cstdint>

namespace wheel::net {

struct TcpServerCounters {
  std::uint64_t connections = 0;      // open now (closing ones excluded)
  std::uint64_t accepted = 0;         // since start, rejected ones excluded
  std::uint64_t rejected_full = 0;    // turned away by max_connections
  std::uint64_t rejected_emfile = 0;  // out of descriptors: told reject_line(), closed
  std::uint64_t accept_errors = 0;    // other failed accepts (ENOMEM, ENOBUFS, ...)
  std::uint64_t slow_consumers = 0;   // closed for exceeding max_output
  // The most output one connection ever had waiting for the kernel at once (bytes, since start;
  // checked as each write queues): what pipelined requests made the server hold.
  std::uint64_t max_queued_output = 0;
  std::uint64_t closing = 0;              // closed, still writing their last output (now)
  std::uint64_t close_grace_expired = 0;  // reset: did not take their output in close_grace
  std::uint64_t stale_timeouts = 0;       // idle timeouts that fired after their connection closed
  std::uint64_t bytes_in = 0;
  std::uint64_t bytes_out = 0;
  // send(2) calls made to write to clients: the replies to one read go out in one (see
  // Connection::send), so bytes_out / writes is the average write.
  std::uint64_t writes = 0;
};

}  // namespace wheel::net
