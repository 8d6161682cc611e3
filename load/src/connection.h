// SPDX-License-Identifier: Apache-2.0
// Internal to wheel-load's library: one client connection and its states.
#pragma once

#include <uv.h>

#include "wheel/net/line_framer.h"

#include <cstdint>
#include <string>
#include <vector>

#include "wheel/load/load_config.h"

namespace wheel::load {

class RunnerCore;

// kNotStarted -> kConnecting -> kOpen -> kQuitting (we sent QUIT at the end) -> kClosed.
// kConnecting -> kClosed on a connect error; kOpen -> kClosed when the server closes or resets
// it, or at the end for a silent connection. kClosed is final; the handle is closed (or being
// closed) and no callback touches the connection afterwards except on_close.
// A churn slot goes back from kClosed to kNotStarted when its handle's close completes.
enum class ConnState : std::uint8_t { kNotStarted, kConnecting, kOpen, kQuitting, kClosed };

// A DELAY sent and not yet delivered back.
struct PendingDelay {
  std::uint32_t seq = 0;
  double sent_ms = 0;
};

struct Connection {
  uv_tcp_t tcp;  // first member: the handle's address is the connection's
  uv_connect_t connect_req;
  RunnerCore* runner = nullptr;
  std::uint32_t local_index = 0;
  bool active = false;
  Role role = Role::kIdle;
  bool churn = false;         // one of the churn slots: reused cycle after cycle
  bool ponged = false;        // churn: this cycle's PONG arrived
  bool handle_open = false;   // uv_tcp_init done and uv_close not yet called
  bool bye_idle = false;      // "BYE idle" arrived: the server's idle close is under way
  bool bye_shutdown = false;  // "BYE shutdown" arrived: the server is shutting down
  ConnState state = ConnState::kNotStarted;
  std::uint16_t pings_in_flight = 0;
  // Just before connect() was called (run clock): the server cannot have accepted earlier,
  // however long this process is preempted; on_connect may run much later on a busy loop, and
  // measuring from it would make a punctual server look early.
  double connect_ms = 0;
  double ping_sent_ms = -1;          // send time of the oldest unanswered PING still timed, or -1
  wheel::net::LineBuffer partial;    // an incomplete line from the server
  std::uint32_t churn_cycle = 0;     // churn: cycles this slot has run
  std::uint32_t delay_seq = 0;       // DELAY: token of the next message
  std::uint32_t oks_due = 0;         // DELAY: "OK"s still to come
  std::uint32_t garbage_due = 0;     // garbage: "ERR unknown command"s still to come
  std::vector<PendingDelay> delays;  // DELAY: sent, not yet delivered (<= kMaxDelaysInFlight)
};

}  // namespace wheel::load
