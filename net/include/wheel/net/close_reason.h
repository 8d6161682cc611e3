// SPDX-License-Identifier: Apache-2.0
// CloseReason: why a connection closed, the one vocabulary of the server, its handlers and
// their metrics. The server reports the reasons it sees itself (a reset, an error, a slow
// consumer, a line too long, the shutdown); a handler names its own when it closes
// (Connection::close_with(words, reason)), or leaves it at kLocal.
#pragma once

#include <cstddef>
#include <cstdint>

namespace wheel::net {

enum class CloseReason : std::uint8_t {
  kReaderIdle,    // the handler closed on a reader-idle event
  kWriterIdle,    // the handler closed on a writer-idle event
  kAllIdle,       // the handler closed on an all-idle event
  kQuit,          // the client asked to end the session (a protocol's QUIT)
  kPeerClosed,    // the client closed or reset the connection, or ended its input
  kSlowConsumer,  // queued output exceeded max_output
  kLineTooLong,   // a line exceeded max_line
  kError,         // a read or write failed
  kShutdown,      // the server shut down
  kLocal,         // the handler closed for a reason of its own
};
inline constexpr std::size_t kCloseReasonCount = 10;

// "reader idle", "writer idle", "all idle", "quit", "peer closed", "slow consumer", "line too
// long", "error", "shutdown" or "local". Safe from any thread.
const char* to_string(CloseReason reason);

}  // namespace wheel::net
