// SPDX-License-Identifier: Apache-2.0
// Server metrics for Prometheus: the wheel_* families of wheel-server, where one worker keeps
// them (ServerMetricsSlot), how the workers of a pre-fork pool share them (ServerMetricsRegion)
// and how they are summed and written (ServerMetricsValues, render_server_metrics()).
//
// Why shared memory (as nginx's status zone): the supervisor maps one region with
// MAP_SHARED | MAP_ANONYMOUS before it forks, one cache-line-aligned slot per worker. A worker
// stores its counters into its own slot with relaxed atomics (single writer per field: no
// read-modify-write, no lock, no false sharing between workers); a scrape is the supervisor
// reading every slot. So a scrape costs the workers nothing (no IPC, no request to answer, no
// worker that must be alive or responsive to be counted), and the counters of a worker that
// died (even by SIGKILL) are still in its slot for the supervisor to keep.
//
// A dead worker's counters stay counted: before the supervisor forks its replacement it folds
// the slot's counters and histograms into a total it holds itself (ServerMetricsValues::
// add_counters), then clears the slot; gauges (open connections, pending DELAYs and
// timeouts) are not folded, since the dead worker's connections and timeouts are gone. Every
// counter therefore stays monotonic across restarts. The connections the dead worker had
// open are counted in accepted_total but in no closed_total reason.
//
// Reads are per field: a scrape racing a worker may see one counter updated and a related one
// not yet (accepted but not open); each value on its own is exact and monotonic.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "wheel/net/close_reason.h"
#include "wheel/server/histogram_bounds.h"

namespace wheel::server {

// The "reason" label of wheel_connections_closed_total: "reader_idle", "writer_idle",
// "all_idle", "quit", "peer", "slow_consumer", "line_too_long", "error", "shutdown" or "local".
std::string_view label_of(net::CloseReason reason);

// The values of one worker's slot, or a sum of slots. Plain data.
struct ServerMetricsValues {
  // Gauges: the state now.
  std::uint64_t connections_open = 0;
  std::uint64_t delayed_pending = 0;
  std::uint64_t timer_pending_timeouts = 0;
  // Counters: since start.
  std::uint64_t accepted = 0;
  std::uint64_t rejected_full = 0;
  std::uint64_t rejected_emfile = 0;
  std::array<std::uint64_t, net::kCloseReasonCount> closed{};
  // Connections a worker still held when it died (SIGKILL, a crash), counted by the supervisor
  // when it folds the dead worker's slot in: closed_total{reason="worker_lost"}. Never in a slot.
  std::uint64_t closed_worker_lost = 0;
  std::uint64_t heartbeats_sent = 0;
  std::uint64_t pings = 0;
  std::uint64_t delayed_sent = 0;
  std::uint64_t bytes_received = 0;
  std::uint64_t bytes_sent = 0;
  HistogramCounts<kIdleCloseLatenessBounds.size()> idle_close_lateness;
  HistogramCounts<kTickLagBounds.size()> tick_lag;

  // Adds `other`'s counters and histograms (not its gauges): what a dead worker leaves behind.
  void add_counters(const ServerMetricsValues& other);
  // Adds everything, gauges included: the sum over live workers.
  void add_all(const ServerMetricsValues& other);
  std::uint64_t closed_total() const;
};

// One worker's metrics. Every field has a single writer: the worker's loop thread (tick_lag
// too: the LoopTimer calls its observer there). Readers: any thread or process. No
// pointers, so it may live in memory shared by processes. 64-byte aligned: no two workers'
// slots share a cache line.
struct alignas(64) ServerMetricsSlot {
  ServerMetricsSlot() = default;
  ServerMetricsSlot(const ServerMetricsSlot&) = delete;
  ServerMetricsSlot& operator=(const ServerMetricsSlot&) = delete;

  // Stores the loop thread's values (everything but the histograms, which are observed in
  // place). Loop thread of the owning worker only.
  void publish(const ServerMetricsValues& values) noexcept;
  // The current values. Safe from any thread or process.
  ServerMetricsValues read() const noexcept;
  // Back to zero. REQUIRES: no writer (the worker is dead or not yet started).
  void reset() noexcept;

  std::atomic<std::uint64_t> connections_open{0};
  std::atomic<std::uint64_t> delayed_pending{0};
  std::atomic<std::uint64_t> timer_pending_timeouts{0};
  std::atomic<std::uint64_t> accepted{0};
  std::atomic<std::uint64_t> rejected_full{0};
  std::atomic<std::uint64_t> rejected_emfile{0};
  std::array<std::atomic<std::uint64_t>, net::kCloseReasonCount> closed{};
  std::atomic<std::uint64_t> heartbeats_sent{0};
  std::atomic<std::uint64_t> pings{0};
  std::atomic<std::uint64_t> delayed_sent{0};
  std::atomic<std::uint64_t> bytes_received{0};
  std::atomic<std::uint64_t> bytes_sent{0};
  // Observed in place: by the loop thread at each idle close.
  MetricsHistogram<kIdleCloseLatenessBounds.size()> idle_close_lateness{kIdleCloseLatenessBounds};
  // Its own cache line (it had a writer of its own when the timer had a thread).
  alignas(64) MetricsHistogram<kTickLagBounds.size()> tick_lag{kTickLagBounds};
};

// `slots` ServerMetricsSlot in one MAP_SHARED | MAP_ANONYMOUS mapping: mapped before fork, it
// is the same memory in the parent and every child forked afterwards. Unmapped when the object
// goes (in each process that still holds it). Movable, not copyable.
class ServerMetricsRegion {
 public:
  // Throws std::system_error when mmap fails; std::invalid_argument for 0 slots.
  explicit ServerMetricsRegion(std::size_t slots);

  std::size_t size() const { return size_; }
  // REQUIRES: i < size().
  ServerMetricsSlot& slot(std::size_t i) { return slots_[i]; }
  const ServerMetricsSlot& slot(std::size_t i) const { return slots_[i]; }

 private:
  // munmap of the whole mapping. The slots need no destructor (atomics of integers).
  struct Unmap {
    std::size_t bytes;
    void operator()(ServerMetricsSlot* slots) const noexcept;
  };
  std::unique_ptr<ServerMetricsSlot[], Unmap> slots_;
  std::size_t size_;
};

// The body of a scrape: every wheel_* family (HELP, TYPE, samples), in the Prometheus text
// format 0.0.4, with `live_workers` as wheel_workers, and wheel_build_info. (The process_*
// families are the caller's: process_metrics.h.) Safe from any thread.
std::string render_server_metrics(const ServerMetricsValues& values, std::uint64_t live_workers);

}  // namespace wheel::server
