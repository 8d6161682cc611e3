// SPDX-License-Identifier: Apache-2.0
#include "wheel/server/server_metrics.h"

#include <sys/mman.h>

#include <cerrno>
#include <new>
#include <stdexcept>
#include <system_error>

#include "wheel/server/process_metrics.h"
#include "wheel/server/prometheus_text.h"

namespace wheel::server {
namespace {

// In net::CloseReason's order.
constexpr std::array<std::string_view, net::kCloseReasonCount> kClosedLabels = {
    "reader_idle",   "writer_idle",   "all_idle", "quit",     "peer",
    "slow_consumer", "line_too_long", "error",    "shutdown", "local"};

// A plain field of ServerMetricsValues and its twin in ServerMetricsSlot: the one list that
// publish(), read() and the sums walk. (The closed array and the histograms are handled apart.)
struct Field {
  std::uint64_t ServerMetricsValues::*value;
  std::atomic<std::uint64_t> ServerMetricsSlot::*slot;
};

// Gauges: the state now; not folded in when a worker dies.
constexpr Field kGauges[] = {
    {&ServerMetricsValues::connections_open, &ServerMetricsSlot::connections_open},
    {&ServerMetricsValues::delayed_pending, &ServerMetricsSlot::delayed_pending},
    {&ServerMetricsValues::timer_pending_timeouts, &ServerMetricsSlot::timer_pending_timeouts},
};

// Counters: since start (closed and closed_worker_lost apart).
constexpr Field kCounters[] = {
    {&ServerMetricsValues::accepted, &ServerMetricsSlot::accepted},
    {&ServerMetricsValues::rejected_full, &ServerMetricsSlot::rejected_full},
    {&ServerMetricsValues::rejected_emfile, &ServerMetricsSlot::rejected_emfile},
    {&ServerMetricsValues::heartbeats_sent, &ServerMetricsSlot::heartbeats_sent},
    {&ServerMetricsValues::pings, &ServerMetricsSlot::pings},
    {&ServerMetricsValues::delayed_sent, &ServerMetricsSlot::delayed_sent},
    {&ServerMetricsValues::bytes_received, &ServerMetricsSlot::bytes_received},
    {&ServerMetricsValues::bytes_sent, &ServerMetricsSlot::bytes_sent},
};

void put(std::atomic<std::uint64_t>& field, std::uint64_t value) {
  field.store(value, std::memory_order_relaxed);
}
std::uint64_t get(const std::atomic<std::uint64_t>& field) {
  return field.load(std::memory_order_relaxed);
}

}  // namespace

std::string_view label_of(net::CloseReason reason) {
  return kClosedLabels[static_cast<std::size_t>(reason)];
}

void ServerMetricsValues::add_counters(const ServerMetricsValues& o) {
  for (const Field& f : kCounters) this->*f.value += o.*f.value;
  for (std::size_t i = 0; i < closed.size(); ++i) closed[i] += o.closed[i];
  closed_worker_lost += o.closed_worker_lost;
  idle_close_lateness += o.idle_close_lateness;
  tick_lag += o.tick_lag;
}

void ServerMetricsValues::add_all(const ServerMetricsValues& o) {
  add_counters(o);
  for (const Field& f : kGauges) this->*f.value += o.*f.value;
}

std::uint64_t ServerMetricsValues::closed_total() const {
  std::uint64_t n = closed_worker_lost;
  for (const std::uint64_t c : closed) n += c;
  return n;
}

void ServerMetricsSlot::publish(const ServerMetricsValues& v) noexcept {
  for (const Field& f : kGauges) put(this->*f.slot, v.*f.value);
  for (const Field& f : kCounters) put(this->*f.slot, v.*f.value);
  for (std::size_t i = 0; i < closed.size(); ++i) put(closed[i], v.closed[i]);
}

ServerMetricsValues ServerMetricsSlot::read() const noexcept {
  ServerMetricsValues v;
  for (const Field& f : kGauges) v.*f.value = get(this->*f.slot);
  for (const Field& f : kCounters) v.*f.value = get(this->*f.slot);
  for (std::size_t i = 0; i < closed.size(); ++i) v.closed[i] = get(closed[i]);
  v.idle_close_lateness = idle_close_lateness.read();
  v.tick_lag = tick_lag.read();
  return v;
}

void ServerMetricsSlot::reset() noexcept {
  publish(ServerMetricsValues{});
  idle_close_lateness.reset();
  tick_lag.reset();
}

ServerMetricsRegion::ServerMetricsRegion(std::size_t slots)
    : slots_(nullptr, Unmap{slots * sizeof(ServerMetricsSlot)}), size_(slots) {
  if (slots == 0) throw std::invalid_argument("ServerMetricsRegion: 0 slots");
  void* memory = ::mmap(nullptr, slots_.get_deleter().bytes, PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) {
    throw std::system_error(errno, std::generic_category(), "mmap of the metrics region");
  }
  // Page-aligned, so every slot is 64-byte aligned.
  auto* first = static_cast<ServerMetricsSlot*>(memory);
  for (std::size_t i = 0; i < slots; ++i) new (&first[i]) ServerMetricsSlot();
  slots_.reset(first);
}

void ServerMetricsRegion::Unmap::operator()(ServerMetricsSlot* slots) const noexcept {
  ::munmap(slots, bytes);
}

std::string render_server_metrics(const ServerMetricsValues& v, std::uint64_t live_workers) {
  PrometheusText t;
  t.gauge("wheel_connections_open", "Client connections open now.", v.connections_open);
  t.counter("wheel_connections_accepted_total",
            "Client connections accepted (rejected ones excluded).", v.accepted);
  t.series("wheel_connections_rejected_total", "counter",
           "Clients turned away with \"ERR server full\": by max-connections (full) or for "
           "lack of descriptors (emfile).",
           "reason", {{"full", v.rejected_full}, {"emfile", v.rejected_emfile}});
  t.family("wheel_connections_closed_total", "counter", "Client connections closed, by reason.");
  for (std::size_t i = 0; i < net::kCloseReasonCount; ++i) {
    t.sample("wheel_connections_closed_total", {{"reason", kClosedLabels[i]}}, v.closed[i]);
  }
  t.sample("wheel_connections_closed_total", {{"reason", "worker_lost"}}, v.closed_worker_lost);
  t.counter("wheel_heartbeats_sent_total", "PINGs sent to writer-idle clients.", v.heartbeats_sent);
  t.counter("wheel_pings_total", "PING commands answered with PONG.", v.pings);
  t.gauge("wheel_delayed_pending", "DELAY messages scheduled, not yet delivered.",
          v.delayed_pending);
  t.counter("wheel_delayed_sent_total", "DELAY messages delivered.", v.delayed_sent);
  t.counter("wheel_bytes_received_total", "Bytes read from clients.", v.bytes_received);
  t.counter("wheel_bytes_sent_total", "Bytes written to clients.", v.bytes_sent);
  t.gauge("wheel_timer_pending_timeouts",
          "Timeouts pending in the timer wheels (idle checks and DELAYs).",
          v.timer_pending_timeouts);
  t.gauge("wheel_workers", "Worker processes alive.", live_workers);
  t.family("wheel_idle_close_lateness_seconds", "histogram",
           "Time past the configured idle time at which an idle close happened.");
  t.histogram("wheel_idle_close_lateness_seconds", kIdleCloseLatenessBounds, v.idle_close_lateness);
  t.family("wheel_timer_tick_lag_seconds", "histogram",
           "How late the loop timer woke for each tick with work due (after the tick ended).");
  t.histogram("wheel_timer_tick_lag_seconds", kTickLagBounds, v.tick_lag);
  return t.take() + render_build_info();
}

}  // namespace wheel::server
