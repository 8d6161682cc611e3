// SPDX-License-Identifier: Apache-2.0
// ConnectionHandler: what a TcpServer calls for its connections; a protocol is one of these.
// Override what you need. Every call runs on the loop thread; a call may send, close or abort
// the connection it names (and any other, found by id through TcpServer::find).
#pragma once

#include <string_view>

#include "wheel/net/close_reason.h"
#include "wheel/net/connection.h"
#include "wheel/net/idle_watch.h"

namespace wheel::net {

class ConnectionHandler {
 public:
  virtual ~ConnectionHandler() = default;

  // A client connected (already counted and watched for idleness).
  virtual void on_open(Connection&) {}
  // Framing::kBytes: bytes read from the client (valid during the call only).
  virtual void on_data(Connection&, std::string_view) {}
  // Framing::kLines: one line, without "\n" and one trailing "\r" (valid during the call only).
  virtual void on_line(Connection&, std::string_view) {}
  // Framing::kLines: a line exceeded max_line. The default closes the connection; a handler may
  // close_with() an error line instead (naming CloseReason::kLineTooLong, or a reason of its
  // own). If it does not close, the server closes with kLineTooLong.
  virtual void on_line_too_long(Connection& c) { c.close(CloseReason::kLineTooLong); }
  // The client ended its input (EOF after SHUT_WR or close): it sends no more requests but may
  // still read. The default closes once everything queued is written; a handler that owes
  // more (delayed replies) closes later itself, naming the reason (kPeerClosed, as here).
  // Idle detection keeps running meanwhile.
  virtual void on_input_end(Connection& c) { c.close(CloseReason::kPeerClosed); }
  // The connection was idle (see idle_detector.h). The default does nothing, as Netty's.
  virtual void on_idle(Connection&, IdleEvent) {}
  // The connection's queued output fell to the mark it was given by notify_output_below()
  // (once per such call): a handler that paused its input may resume it here.
  virtual void on_output_below(Connection&) {}
  // The connection began to close, for `reason`; the last call naming it. Free its context.
  virtual void on_close(Connection&, CloseReason) {}

  // The line sent to a client beyond max_connections before it is closed; empty: none.
  virtual std::string_view reject_line() { return {}; }
  // The last words of a graceful shutdown, sent to every client; empty: none.
  virtual std::string_view goodbye() { return {}; }
  // A graceful shutdown began (before the goodbyes): close the handler's own loop handles.
  virtual void on_shutdown() {}
};

}  // namespace wheel::net
