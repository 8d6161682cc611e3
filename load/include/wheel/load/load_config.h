// SPDX-License-Identifier: Apache-2.0
// What one wheel-load run (or one process's share of it) does: where to connect, how many
// connections, which of them are active, and what the server is expected to do with them.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "wheel/load/address_range.h"
#include "wheel/load/host_address.h"

namespace wheel::load {

struct LoadConfig {
  HostAddress host;  // 127.0.0.1 unless set
  std::uint16_t port = 7000;
  // Connections of the whole run; this process opens [first_index, first_index + share).
  std::size_t connections = 10'000;
  std::size_t first_index = 0;
  std::size_t share = 10'000;
  double active_ratio = 0.5;  // share of connections that send PING; 0..1
  std::chrono::milliseconds ping_interval{1000};
  // 0: the server must not close idle connections (all must survive).
  std::chrono::milliseconds expect_idle_close{5000};
  std::chrono::milliseconds tolerance{1000};  // how late an idle close may be
  std::chrono::milliseconds duration{20'000};
  double connect_rate = 5000;  // connections opened per second by this process
  // Local IPv4 addresses to bind, in turn; empty: let the kernel choose (always for IPv6).
  std::vector<Ipv4> source_addresses{0x7f000001};
  std::uint64_t seed = 1;  // for the ping jitter
  unsigned processes = 1;  // how many processes share the run (for the report)

  // The mix (issue 12's soak). Shares of the *active* connections that, once per
  // ping_interval, do something other than PING; the rest PING. Each share is 0..1 and
  // together they are at most 1.
  double delay_share = 0;    // "DELAY <delay> <token>": expect "OK", then "DELAYED <token>" on time
  double slow_share = 0;     // a burst of slow_burst PINGs whose PONGs are read slowly
  double garbage_share = 0;  // an unknown command: expect "ERR unknown command"
  std::chrono::milliseconds delay{500};
  std::size_t slow_burst = 32;  // <= kMaxSlowBurst
  // Churn: up to `churn` short connections at once (whole run; a fan-out splits them), each
  // cycle connect, PING, PONG, then QUIT and the server's close (every 4th cycle: an abortive
  // close, RST, instead), at most churn_rate cycles per second in all.
  std::size_t churn = 0;
  double churn_rate = 0;
  // Which connections answer the server's heartbeat PINGs with PONG. An idle connection that
  // answered would stop being idle to the server, so by default only active ones do.
  enum class Heartbeats : std::uint8_t { kNone, kActive, kAll };
  Heartbeats answer_heartbeats = Heartbeats::kActive;
};

// The largest --slow-burst: a burst is one write of "PING\n" * n.
inline constexpr std::size_t kMaxSlowBurst = 1024;

// What a long-lived connection does once per ping interval (kIdle: nothing, ever).
enum class Role : std::uint8_t { kIdle, kPing, kDelay, kSlowReader, kGarbage };

// Whether the connection with global index `index` is active (sends PING). Active connections
// are spread evenly over the indices, floor(connections * ratio) of them in all, so every
// process of a fan-out and every source address gets its fair share of both kinds.
inline bool is_active(std::size_t index, double active_ratio) {
  const auto before = static_cast<std::uint64_t>(static_cast<double>(index) * active_ratio);
  const auto after = static_cast<std::uint64_t>(static_cast<double>(index + 1) * active_ratio);
  return after > before;
}

// The role of the connection with global index `index`: is_active picks the active ones; among
// those, a low-discrepancy sequence of the index (golden-ratio steps) spreads the DELAY, slow
// and garbage shares evenly over the indices, so every process and address gets its share.
Role role_of(std::size_t index, const LoadConfig& config);

}  // namespace wheel::load
