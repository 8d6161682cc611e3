// SPDX-License-Identifier: Apache-2.0
// MetricsHistogram: a fixed-bucket histogram that one thread fills and any thread (or, in
// shared memory, any process) reads, for a Prometheus exposition. Plain atomics, no pointers:
// it may live in a MAP_SHARED mapping. Used by wheel-server's metrics and by wheel::jobs (sync
// latency and batch sizes, delivery lateness); the text writer is the program's.
//
// Units: bounds are given in the unit the exposition shows (seconds, records, bytes); values
// are observed as whole base units, `base_per_unit` of them per shown unit. Durations use the
// one-argument constructor: seconds shown, nanoseconds observed (observe(nanoseconds)). Sizes
// use base_per_unit 1 and observe_value().
//
// One writer at a time: observe() is a relaxed load and store per field (no read-modify-write),
// so calls must not overlap (one thread, or several serialized by a mutex). Readers see every
// field monotonic; a reader racing observe() may see the bucket before the sum, so a snapshot's
// sum can lag its count by one observation (Prometheus tolerates that; the +Inf bucket equals
// the count by construction, see HistogramCounts).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>

namespace wheel {

// A histogram's values read at one moment: per-bucket (not cumulative) counts, the last one
// for values above every bound (+Inf), and the sum of the observed values in base units
// (nanoseconds for durations).
template <std::size_t N>
struct HistogramCounts {
  std::array<std::uint64_t, N + 1> buckets{};
  std::uint64_t sum = 0;

  // Every observation lands in exactly one bucket, so the count is their sum.
  std::uint64_t count() const {
    std::uint64_t n = 0;
    for (const std::uint64_t b : buckets) n += b;
    return n;
  }
  HistogramCounts& operator+=(const HistogramCounts& other) {
    for (std::size_t i = 0; i < buckets.size(); ++i) buckets[i] += other.buckets[i];
    sum += other.sum;
    return *this;
  }
};

// N buckets with the upper bounds `bounds` (ascending, shown units), plus +Inf.
template <std::size_t N>
class MetricsHistogram {
 public:
  // A duration histogram: bounds in seconds, values in nanoseconds.
  explicit constexpr MetricsHistogram(const std::array<double, N>& bounds)
      : MetricsHistogram(bounds, 1e9) {}
  // Any unit: a bound b counts values <= b * base_per_unit base units.
  constexpr MetricsHistogram(const std::array<double, N>& bounds, double base_per_unit) {
    for (std::size_t i = 0; i < N; ++i) {
      bounds_[i] = static_cast<std::uint64_t>(bounds[i] * base_per_unit + 0.5);  // 0.001 s: 1e6 ns
    }
  }
  MetricsHistogram(const MetricsHistogram&) = delete;
  MetricsHistogram& operator=(const MetricsHistogram&) = delete;

  // Counts a duration (negative counts as 0). For histograms built with the one-argument
  // constructor. One writer at a time (see the file comment); lock-free, no allocation.
  void observe(std::chrono::nanoseconds value) noexcept {
    observe_value(value.count() < 0 ? 0 : static_cast<std::uint64_t>(value.count()));
  }
  // Counts `value` base units in the first bucket whose bound is >= it. O(N), N fixed and
  // small. One writer at a time.
  void observe_value(std::uint64_t value) noexcept {
    std::size_t i = 0;
    while (i < N && value > bounds_[i]) ++i;
    bump(buckets_[i], 1);
    bump(sum_, value);
  }

  // The current values. Safe from any thread or process mapping it.
  HistogramCounts<N> read() const noexcept {
    HistogramCounts<N> out;
    for (std::size_t i = 0; i <= N; ++i) {
      out.buckets[i] = buckets_[i].load(std::memory_order_relaxed);
    }
    out.sum = sum_.load(std::memory_order_relaxed);
    return out;
  }

  // Back to zero. REQUIRES: no concurrent observe() (the writer is gone).
  void reset() noexcept {
    for (auto& b : buckets_) b.store(0, std::memory_order_relaxed);
    sum_.store(0, std::memory_order_relaxed);
  }

 private:
  static void bump(std::atomic<std::uint64_t>& field, std::uint64_t by) noexcept {
    field.store(field.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
  }

  std::array<std::uint64_t, N> bounds_{};
  std::array<std::atomic<std::uint64_t>, N + 1> buckets_{};
  std::atomic<std::uint64_t> sum_{0};
  static_assert(std::atomic<std::uint64_t>::is_always_lock_free,
                "shared between processes: must be lock-free");
};

}  // namespace wheel
