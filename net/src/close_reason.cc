// SPDX-License-Identifier: Apache-2.0
#include "wheel/net/close_reason.h"

namespace wheel::net {

const char* to_string(CloseReason reason) {
  switch (reason) {
    case CloseReason::kReaderIdle:
      return "reader idle";
    case CloseReason::kWriterIdle:
      return "writer idle";
    case CloseReason::kAllIdle:
      return "all idle";
    case CloseReason::kQuit:
      return "quit";
    case CloseReason::kPeerClosed:
      return "peer closed";
    case CloseReason::kSlowConsumer:
      return "slow consumer";
    case CloseReason::kLineTooLong:
      return "line too long";
    case CloseReason::kError:
      return "error";
    case CloseReason::kShutdown:
      return "shutdown";
    case CloseReason::kLocal:
      return "local";
  }
  return "?";
}

}  // namespace wheel::net
