// SPDX-License-Identifier: Apache-2.0
// MetricsHistogram: a fixed-bucket histogram of durations that one thread fills and any thread
// (or, in shared memory, any process) reads, for the Prometheus exposition
// (prometheus_text.h). Plain atomics, no pointers: it may live in a MAP_SHARED mapping.
//
// One writer: observe() is a relaxed load and store per field (no read-modify-write), so it
// must be called by one thread at a time (the owning worker's loop thread). Readers
// see every field monotonic; a reader racing observe() may see the bucket before the sum, so
// a snapshot's _sum can lag its count by one observation (Prometheus tolerates that; the
// +Inf bucket equals _count by construction, see HistogramCounts).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>

namespace wheel::server {

// Upper bounds (seconds) of wheel_idle_close_lateness_seconds: ms-scale, as idle closes come
// within about one tick of their due time (1 ms default tick, up to 100 ms ticks and stalls).
inline constexpr std::array<double, 13> kIdleCloseLatenessBounds = {
    0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10};
// Upper bounds (seconds) of wheel_timer_tick_lag_seconds: sub-millisecond (a prompt worker)
// to seconds (a starved machine).
inline constexpr std::array<double, 15> kTickLagBounds = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5};

// A histogram's values read at one moment: per-bucket (not cumulative) counts, the last one
// for values above every bound (+Inf), and the sum of the observed values in nanoseconds.
template <std::size_t N>
struct HistogramCounts {
  std::array<std::uint64_t, N + 1> buckets{};
  std::uint64_t sum_ns = 0;

  // Every observation lands in exactly one bucket, so the count is their sum.
  std::uint64_t count() const {
    std::uint64_t n = 0;
    for (const std::uint64_t b : buckets) n += b;
    return n;
  }
  HistogramCounts& operator+=(const HistogramCounts& other) {
    for (std::size_t i = 0; i < buckets.size(); ++i) buckets[i] += other.buckets[i];
    sum_ns += other.sum_ns;
    return *this;
  }
};

// N buckets with the upper bounds `bounds` (seconds, ascending), plus +Inf.
template <std::size_t N>
class MetricsHistogram {
 public:
  explicit constexpr MetricsHistogram(const std::array<double, N>& bounds) {
    for (std::size_t i = 0; i < N; ++i) bounds_ns_[i] = static_cast<std::int64_t>(bounds[i] * 1e9);
  }
  MetricsHistogram(const MetricsHistogram&) = delete;
  MetricsHistogram& operator=(const MetricsHistogram&) = delete;

  // Counts `value` (negative counts as 0) in the first bucket whose bound is >= it. O(N), N
  // fixed and small. One writer at a time (see the file comment); lock-free, no allocation.
  void observe(std::chrono::nanoseconds value) noexcept {
    const std::int64_t ns = value.count() < 0 ? 0 : value.count();
    std::size_t i = 0;
    while (i < N && ns > bounds_ns_[i]) ++i;
    bump(buckets_[i], 1);
    bump(sum_ns_, static_cast<std::uint64_t>(ns));
  }

  // The current values. Safe from any thread or process mapping it.
  HistogramCounts<N> read() const noexcept {
    HistogramCounts<N> out;
    for (std::size_t i = 0; i <= N; ++i)
      out.buckets[i] = buckets_[i].load(std::memory_order_relaxed);
    out.sum_ns = sum_ns_.load(std::memory_order_relaxed);
    return out;
  }

  // Back to zero. REQUIRES: no concurrent observe() (the writer is gone).
  void reset() noexcept {
    for (auto& b : buckets_) b.store(0, std::memory_order_relaxed);
    sum_ns_.store(0, std::memory_order_relaxed);
  }

 private:
  static void bump(std::atomic<std::uint64_t>& field, std::uint64_t by) noexcept {
    field.store(field.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
  }

  std::array<std::int64_t, N> bounds_ns_{};
  std::array<std::atomic<std::uint64_t>, N + 1> buckets_{};
  std::atomic<std::uint64_t> sum_ns_{0};
  static_assert(std::atomic<std::uint64_t>::is_always_lock_free,
                "shared between processes: must be lock-free");
};

}  // namespace wheel::server
