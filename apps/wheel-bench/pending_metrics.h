// SPDX-License-Identifier: Apache-2.0
// Metrics over large numbers of pending timeouts, for any timer of timer_impls.h:
// - longdelay: the worker thread's CPU per second of wall time while N timeouts of 1 min .. 24 h
//   wait and none expires (TimerBench's long_delay_worker_cpu_ms_per_s, same method and options);
// - scaling: schedule and cancel cost per operation against the pending count, and the worker's
//   cost per tick with that many long timeouts pending.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "bench_options.h"
#include "bench_report.h"
#include "metric_support.h"

namespace wheel::bench {

struct WorkerLoad {
  double cpu_ms_per_s;  // NaN when the worker's CPU clock could not be read
  double secs;          // wall time measured
  std::size_t pending;  // pending_timeouts() at the end of the measurement
};

// Starts a timer at `tick_ms`, schedules `count` no-op timeouts with delays uniform in
// [--long-min-s, --long-max-s], lets the worker file them all (TimerBench's settle time), then
// reads the worker thread's CPU clock over `secs` seconds of wall time.
template <class Impl>
WorkerLoad worker_load_with_pending(const BenchOptions& o, std::mt19937_64& rng, std::int64_t count,
                                    std::int64_t tick_ms, double secs) {
  const std::string name = thread_name("long");
  Impl t(tick_ms, o.wheel, name);
  t.start();
  const auto n = static_cast<std::size_t>(count);
  std::uniform_int_distribution<std::int64_t> delay(o.long_min_s * kSec, o.long_max_s * kSec);
  std::vector<typename Impl::Handle> keep(n);
  for (auto& h : keep) h = t.schedule([] {}, std::chrono::nanoseconds(delay(rng)));
  // As TimerBench: room for moving 100,000 a tick into the wheel, then its GC settle time.
  sleep_ms(std::max<std::int64_t>(1000, (count / 100'000 + 2) * tick_ms * 2) + 300);
  const std::int64_t c0 = worker_cpu_ns(name), a = now_ns();
  sleep_ms(static_cast<std::int64_t>(std::llround(secs * 1000)));
  const std::int64_t c1 = worker_cpu_ns(name), b = now_ns();
  const double wall_s = (b - a) / 1e9;
  const WorkerLoad load{c0 < 0 || c1 < 0 ? NAN : (c1 - c0) / 1e6 / wall_s, wall_s, t.pending()};
  for (auto& h : keep) Impl::cancel(h);
  stop_timer(t);
  return load;
}

// longdelay: --long-n timeouts at each of --long-ticks.
template <class Impl>
void long_delay(const BenchOptions& o, std::mt19937_64& rng, std::int64_t tick_ms) {
  const WorkerLoad w = worker_load_with_pending<Impl>(o, rng, o.long_n, tick_ms, o.long_secs);
  emit(Impl::kName, "long_delay_worker_cpu_ms_per_s", o.long_n, w.cpu_ms_per_s, "ms/s", tick_ms,
       {{"min_s", o.long_min_s},
        {"max_s", o.long_max_s},
        {"secs", number(w.secs)},
        {"pending", w.pending}});
}

// Scaling: at each pending count N, after an untimed warm-up round, schedule N timeouts of
// 1..60 s, let the worker file them, then cancel all N in random order. Cost per operation on the
// calling thread; drain_ms is the time the worker then needs until pending() reads 0. Then, on a
// fresh timer at --scaling-cost-tick, the worker's CPU with N long timeouts pending, per tick.
template <class Impl>
void scaling(const BenchOptions& o, std::mt19937_64& rng) {
  for (std::int64_t count : o.scaling_n) {
    const auto n = static_cast<std::size_t>(count);
    const auto d = random_delays(rng, n, 1 * kSec, 60 * kSec);
    std::vector<std::uint32_t> order(n);
    for (std::size_t i = 0; i < n; ++i) order[i] = static_cast<std::uint32_t>(i);
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<typename Impl::Handle> refs(n);
    Impl t(o.scaling_tick, o.wheel, thread_name("scale"));
    t.start();
    // Untimed warm-up at the same N: memory first touched, allocator free lists filled, as in
    // a server that has run for a while (libuv's caller-allocated handles are warm likewise).
    for (std::size_t i = 0; i < n; ++i) refs[i] = t.schedule([] {}, std::chrono::nanoseconds(d[i]));
    for (auto& h : refs) Impl::cancel(h);
    wait_pending_zero(t, 120'000);
    sleep_ms(100);
    const std::int64_t s0 = now_ns();
    for (std::size_t i = 0; i < n; ++i) refs[i] = t.schedule([] {}, std::chrono::nanoseconds(d[i]));
    const std::int64_t s1 = now_ns();
    sleep_ms(std::max<std::int64_t>(200, (count / 100'000 + 3) * o.scaling_tick));
    const std::int64_t c0 = now_ns();
    for (std::uint32_t i : order) Impl::cancel(refs[i]);
    const std::int64_t c1 = now_ns();
    const std::int64_t zero_at = wait_pending_zero(t, 120'000);
    const double sched_ns = double(s1 - s0) / count, cancel_ns = double(c1 - c0) / count;
    const nlohmann::ordered_json extra = {{"tick_ms_used", o.scaling_tick},
                                          {"order", "cancel in random order"}};
    emit(Impl::kName, "scaling_schedule_ns_per_op", count, sched_ns, "ns", o.scaling_tick, extra);
    emit(Impl::kName, "scaling_cancel_ns_per_op", count, cancel_ns, "ns", o.scaling_tick, extra);
    emit(Impl::kName, "scaling_schedule_cancel_ns_per_op", count, sched_ns + cancel_ns, "ns",
         o.scaling_tick,
         {{"cancel_drain_ms",
           zero_at < 0 ? nlohmann::ordered_json(nullptr) : number((zero_at - c1) / 1e6)}});
    refs.clear();
    stop_timer(t);

    const std::int64_t tick = o.scaling_cost_tick;
    const WorkerLoad w = worker_load_with_pending<Impl>(o, rng, count, tick, o.scaling_secs);
    const nlohmann::ordered_json cost_extra = {{"min_s", o.long_min_s},
                                               {"max_s", o.long_max_s},
                                               {"secs", number(w.secs)},
                                               {"pending", w.pending}};
    emit(Impl::kName, "scaling_worker_cpu_ms_per_s", count, w.cpu_ms_per_s, "ms/s", tick,
         cost_extra);
    // ms of CPU per second / ticks per second = microseconds of CPU per tick.
    emit(Impl::kName, "scaling_worker_us_per_tick", count, w.cpu_ms_per_s * double(tick), "us",
         tick, cost_extra);
  }
}

}  // namespace wheel::bench
