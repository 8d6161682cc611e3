// SPDX-License-Identifier: Apache-2.0
// The raw outcome of a wheel-load run (or of one process's share): counters and samples.
// Results of several processes merge into one; the report (report.h) is computed from it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace wheel::load {

struct LoadResult {
  std::uint64_t connections_requested = 0;
  std::uint64_t connections_established = 0;
  // Connections that never got established, by cause (a uv_err_name such as "ECONNREFUSED" or
  // "EMFILE", or "not_started" / "pending_at_end" when the run ended first).
  std::uint64_t connect_errors = 0;
  std::map<std::string, std::uint64_t> connect_errors_by_kind;

  // Established active connections: open at the end of the run, or closed by the server.
  std::uint64_t active_count = 0;
  std::uint64_t active_survived = 0;
  std::uint64_t active_closed_early = 0;
  std::uint64_t active_closed_by_shutdown = 0;  // closed while the server shut down

  // Established idle connections, partitioned: closed on time / early / late by the server, or
  // still open at the end: never closed when the close was due (connect + expected idle close
  // + tolerance) by then, else not yet due (no failure: the run ended first).
  std::uint64_t idle_count = 0;
  std::uint64_t idle_closed_on_time = 0;
  std::uint64_t idle_closed_early = 0;
  std::uint64_t idle_closed_late = 0;
  std::uint64_t idle_never_closed = 0;
  std::uint64_t idle_not_yet_due = 0;
  // Idle connections closed while the server shut down: neither on time nor early, unjudged.
  std::uint64_t idle_closed_by_shutdown = 0;

  // Why the run ended before --duration, if it did. A run ends early when the server says it is
  // shutting down ("BYE shutdown"; every close after that is the shutdown's), when a signal
  // asks it to stop, or when no connection can be made at all.
  double server_shutdown_at_s = -1;  // when the first "BYE shutdown" arrived, or -1
  int interrupted_by = 0;            // the signal (SIGINT, SIGTERM) that stopped it, or 0
  std::string gave_up;               // why no connection could be made, or empty

  std::uint64_t pings_sent = 0;
  std::uint64_t pongs_received = 0;
  // Server lines other than PONG and BYE* (e.g. "ERR server full"), and resets / read errors.
  std::uint64_t unexpected_lines = 0;
  std::uint64_t bye_idle_received = 0;
  // The server's own heartbeats ("PING" from the server, wheel-server --writer-idle): received,
  // and answered with PONG (see LoadConfig::answer_heartbeats).
  std::uint64_t heartbeats_received = 0;
  std::uint64_t heartbeats_answered = 0;
  std::uint64_t io_errors = 0;
  std::uint64_t peak_open = 0;

  // The mix. DELAY: sent, acknowledged "OK", delivered "DELAYED <token>" (early / on time /
  // late by the idle-close rule with --tolerance), and still undelivered at the end: overdue
  // (missing) or not yet due.
  std::uint64_t delays_sent = 0;
  std::uint64_t delays_acknowledged = 0;
  std::uint64_t delayed_on_time = 0;
  std::uint64_t delayed_early = 0;
  std::uint64_t delayed_late = 0;
  std::uint64_t delayed_missing = 0;
  std::uint64_t delayed_not_yet_due = 0;
  // Garbage: unknown commands sent, "ERR unknown command" received.
  std::uint64_t garbage_sent = 0;
  std::uint64_t garbage_rejected = 0;
  // Slow readers: PINGs they sent (also counted in pings_sent) and PONGs they read.
  std::uint64_t slow_pings_sent = 0;
  std::uint64_t slow_pongs_received = 0;
  // Churn cycles: started (connect called), established, completed (PONG then the server's
  // close after QUIT, or our abort), failed (refused, reset, no PONG, closed early), and
  // interrupted by the end of the run (not a failure).
  std::uint64_t churn_started = 0;
  std::uint64_t churn_established = 0;
  std::uint64_t churn_completed = 0;
  std::uint64_t churn_failed = 0;
  std::uint64_t churn_interrupted = 0;

  // Lateness (ms) of every idle connection the server closed; round-trip time (ms) of PONGs.
  std::vector<double> idle_lateness_ms;
  std::vector<double> rtt_ms;
  // From connect() returning to libuv reporting the connection established, per connection: how
  // far the client's loop lagged (lateness is measured from connect() itself).
  std::vector<double> connect_ms;
  // Lateness (ms) of every DELAYED line: arrival - (send + delay).
  std::vector<double> delayed_lateness_ms;

  double duration_s = 0;
  // The longest time this client's own loop did not run beyond its 1 s progress tick (ms): a
  // stalled client sends late and reads late, so its lateness figures are its own, not the
  // server's.
  double max_loop_stall_ms = 0;
  unsigned processes = 1;
};

// Adds `other` (another process's share) into `into`: counters and samples add up;
// duration_s and peak_open take the maximum (peak_open is refined by the caller, which sees
// all processes at once).
void merge(LoadResult& into, const LoadResult& other);

// Lossless JSON round trip, used to carry a child process's result to its parent.
void to_json(nlohmann::json& j, const LoadResult& r);
void from_json(const nlohmann::json& j, LoadResult& r);

}  // namespace wheel::load
