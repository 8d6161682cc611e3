// SPDX-License-Identifier: Apache-2.0
// The metrics of ../shared/peers/netty/TimerBench.java, run the same way on any timer of
// timer_impls.h: same phases, same delays, same settle times, same formulas. C++ has no GC, so
// where TimerBench settles the heap with System.gc() we only sleep as long.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "bench_options.h"
#include "bench_report.h"
#include "fresh_process.h"
#include "metric_support.h"
#include "pending_metrics.h"

namespace wheel::bench {

// Warm-up on a separate timer (tick 1 ms): schedule/cancel rounds and an expiry round.
template <class Impl>
void warm_up(const BenchOptions& o, std::mt19937_64& rng) {
  if (o.warmup_rounds <= 0 || o.warmup_n <= 0) return;
  Impl t(1, o.wheel, thread_name("warmup"));
  t.start();
  const std::int64_t t0 = now_ns();
  const auto n = static_cast<std::size_t>(o.warmup_n);
  for (std::int64_t r = 0; r < o.warmup_rounds; ++r) {
    const auto d = random_delays(rng, n, 1 * kSec, 60 * kSec);
    std::vector<typename Impl::Handle> refs(n);
    for (std::size_t i = 0; i < n; ++i) refs[i] = t.schedule([] {}, std::chrono::nanoseconds(d[i]));
    for (std::size_t i = 0; i < n; ++i) Impl::cancel(refs[i]);
    wait_pending_zero(t, 30'000);
    Countdown done(o.warmup_n);
    const auto s = random_delays(rng, n, 0, 50 * kMs);
    for (std::size_t i = 0; i < n; ++i) {
      t.schedule([&done] { done.hit(); }, std::chrono::nanoseconds(s[i]));
    }
    done.wait_for(std::chrono::seconds(30));
  }
  stop_timer(t);
  log_line(std::string(Impl::kName) + " warm-up: " + std::to_string(o.warmup_rounds) +
           " rounds x " + std::to_string(o.warmup_n) + " timeouts, " +
           std::to_string((now_ns() - t0) / kMs) + " ms");
}

// (a)+(b): one producer schedules n no-op timeouts of 1..60 s, then cancels them all.
template <class Impl>
void schedule_and_cancel(const BenchOptions& o, std::mt19937_64& rng, std::int64_t tick_ms,
                         bool report_schedule, bool report_cancel) {
  const auto n = static_cast<std::size_t>(o.n);
  const auto d = random_delays(rng, n, 1 * kSec, 60 * kSec);
  std::vector<typename Impl::Handle> refs(n);
  Impl t(tick_ms, o.wheel, thread_name("sched"));
  t.start();  // starting the worker is not part of the measurement
  sleep_ms(300);

  const std::int64_t s0 = now_ns();
  for (std::size_t i = 0; i < n; ++i) refs[i] = t.schedule([] {}, std::chrono::nanoseconds(d[i]));
  const std::int64_t s1 = now_ns();
  const std::size_t pending_after_schedule = t.pending();
  if (report_schedule) {
    emit(Impl::kName, "schedule_ops_per_s", o.n, o.n / ((s1 - s0) / 1e9), "ops/s", tick_ms,
         {{"elapsed_ms", number((s1 - s0) / 1e6)}});
  }

  // As TimerBench: let the worker move everything into the wheel (100,000 a tick at most).
  sleep_ms(std::max<std::int64_t>(200, (o.n / 100'000 + 3) * tick_ms));

  const std::int64_t c0 = now_ns();
  for (std::size_t i = 0; i < n; ++i) Impl::cancel(refs[i]);
  const std::int64_t c1 = now_ns();
  const std::size_t pending_right_after_cancel = t.pending();
  const std::int64_t zero_at = wait_pending_zero(t, 60'000);
  if (report_cancel) {
    emit(Impl::kName, "cancel_ops_per_s", o.n, o.n / ((c1 - c0) / 1e9), "ops/s", tick_ms,
         {{"elapsed_ms", number((c1 - c0) / 1e6)}});
    emit(Impl::kName, "cancel_drain_ms", o.n, zero_at < 0 ? NAN : (zero_at - c1) / 1e6, "ms",
         tick_ms,
         {{"pending_after_schedule", pending_after_schedule},
          {"pending_right_after_cancel", pending_right_after_cancel},
          {"pending_at_end", t.pending()}});
  }
  stop_timer(t);
}

// (c): n timeouts of 0..1000 ms whose task counts; n / (first schedule -> last expiry).
template <class Impl>
void expire(const BenchOptions& o, std::mt19937_64& rng, std::int64_t tick_ms) {
  const auto n = static_cast<std::size_t>(o.n);
  const auto d = random_delays(rng, n, 0, 1000 * kMs);
  const std::int64_t max_delay = *std::max_element(d.begin(), d.end());
  Countdown done(o.n);
  Impl t(tick_ms, o.wheel, thread_name("expire"));
  t.start();
  sleep_ms(300);

  const std::int64_t t0 = now_ns();
  for (std::size_t i = 0; i < n; ++i) {
    t.schedule([&done] { done.hit(); }, std::chrono::nanoseconds(d[i]));
  }
  const std::int64_t t1 = now_ns();
  const bool ok = done.wait_for(std::chrono::seconds(120));
  if (!ok) log_line("expire: only " + std::to_string(o.n - done.left()) + " fired within 120 s");
  const std::int64_t end = ok ? done.done_at() : now_ns();
  const double wall_s = (end - t0) / 1e9;
  emit(Impl::kName, "expire_ops_per_s", o.n, ok ? o.n / wall_s : NAN, "ops/s", tick_ms,
       {{"wall_ms", number(wall_s * 1e3)},
        {"schedule_ms", number((t1 - t0) / 1e6)},
        {"max_delay_ms", number(max_delay / 1e6)}});
  emit(Impl::kName, "expire_overrun_ms", o.n, ok ? (end - (t1 + max_delay)) / 1e6 : NAN, "ms",
       tick_ms);
  stop_timer(t);
}

// (d): heap bytes per pending timeout of 1 h with a capture-less task, once the worker holds
// them; the handle array is allocated before the baseline and subtracted (then included).
template <class Impl>
void memory(const BenchOptions& o, std::int64_t tick_ms) {
  const auto n = static_cast<std::size_t>(o.n);
  Impl t(tick_ms, o.wheel, thread_name("memory"));
  t.start();
  Impl::cancel(t.schedule([] {}, std::chrono::hours(1)));
  wait_pending_zero(t, 10'000);
  sleep_ms(300);

  const std::int64_t used0 = heap_in_use();
  std::vector<typename Impl::Handle> refs(n);  // kept for the whole measurement
  const std::int64_t used1 = heap_in_use();
  for (std::size_t i = 0; i < n; ++i) refs[i] = t.schedule([] {}, std::chrono::hours(1));
  sleep_ms(std::max<std::int64_t>(300, (o.n / 100'000 + 3) * tick_ms));
  const std::int64_t used2 = heap_in_use();
  const std::size_t pending = t.pending();

  emit(Impl::kName, "bytes_per_pending_timeout", o.n, double(used2 - used1) / o.n, "bytes", tick_ms,
       {{"ref_array_subtracted", true}, {"task", "captureless"}, {"pending", pending}});
  emit(Impl::kName, "bytes_per_pending_timeout_incl_ref_array", o.n, double(used2 - used0) / o.n,
       "bytes", tick_ms, {{"ref_array_subtracted", false}, {"ref_array_bytes", used1 - used0}});

  for (auto& h : refs) Impl::cancel(h);
  wait_pending_zero(t, 60'000);
  stop_timer(t);
}

// Percentile as TimerBench takes it: s[floor(p * (m - 1))] of the sorted sample.
inline double percentile_us(const std::vector<std::int64_t>& sorted, double p) {
  return sorted[static_cast<std::size_t>(std::floor(p * double(sorted.size() - 1)))] / 1e3;
}

// Emits <prefix>_{p50,p99,max,min}_us of the lateness sample.
inline void emit_lateness(const char* impl, std::vector<std::int64_t> late, std::int64_t tick_ms,
                          const std::string& prefix = "lateness",
                          const nlohmann::ordered_json& extra = nlohmann::ordered_json::object()) {
  std::sort(late.begin(), late.end());
  const auto m = static_cast<std::int64_t>(late.size());
  emit(impl, prefix + "_p50_us", m, percentile_us(late, 0.50), "us", tick_ms, extra);
  emit(impl, prefix + "_p99_us", m, percentile_us(late, 0.99), "us", tick_ms, extra);
  emit(impl, prefix + "_max_us", m, late.back() / 1e3, "us", tick_ms, extra);
  emit(impl, prefix + "_min_us", m, late.front() / 1e3, "us", tick_ms, extra);
}

// m timeouts with delays uniform in [lo_ns, hi_ns]; fire time - (submit time + delay), sorted.
template <class Impl>
std::vector<std::int64_t> measure_lateness(const BenchOptions& o, std::mt19937_64& rng,
                                           std::int64_t tick_ms, std::int64_t lo_ns,
                                           std::int64_t hi_ns) {
  Impl t(tick_ms, o.wheel, thread_name("late"));
  t.start();
  sleep_ms(50);
  const auto m = static_cast<std::size_t>(o.lateness_n);
  std::vector<std::int64_t> late(m);
  Countdown done(o.lateness_n);
  const auto d = random_delays(rng, m, lo_ns, hi_ns + 1);
  for (std::size_t i = 0; i < m; ++i) {
    const std::int64_t deadline = now_ns() + d[i];
    t.schedule(
        [&late, &done, i, deadline] {
          late[i] = now_ns() - deadline;
          done.hit();
        },
        std::chrono::nanoseconds(d[i]));
  }
  if (!done.wait_for(std::chrono::seconds(hi_ns / kSec + 30))) {
    log_line("lateness: not all timeouts fired within 30 s of the longest delay");
  }
  stop_timer(t);
  return late;
}

// (e): m timeouts of 10..2000 ms; fire time - (submit time + delay).
template <class Impl>
void lateness(const BenchOptions& o, std::mt19937_64& rng, std::int64_t tick_ms) {
  emit_lateness(Impl::kName, measure_lateness<Impl>(o, rng, tick_ms, 10 * kMs, 2000 * kMs),
                tick_ms);
}

// Lateness of timeouts that start beyond one turn of the wheel (on level 1 or higher of the
// hierarchical layout, with rounds to count in the hashed one): delays uniform in
// [turn + 1 tick, 4 turns], turn = tick x wheel. Not a TimerBench metric.
template <class Impl>
void upper_lateness(const BenchOptions& o, std::mt19937_64& rng, std::int64_t tick_ms) {
  const std::int64_t turn = tick_ms * kMs * o.wheel;
  const std::int64_t lo = turn + tick_ms * kMs, hi = 4 * turn;
  emit_lateness(Impl::kName, measure_lateness<Impl>(o, rng, tick_ms, lo, hi), tick_ms,
                "upper_lateness", {{"min_delay_ms", lo / kMs}, {"max_delay_ms", hi / kMs}});
}

// (f): CPU of a started timer with nothing pending, process and worker thread, per second.
template <class Impl>
void idle(const BenchOptions& o) {
  const auto sleep = static_cast<std::int64_t>(std::llround(o.idle_secs * 1000));
  sleep_ms(300);
  const std::int64_t p0 = process_cpu_ns(), w0 = now_ns();
  sleep_ms(sleep);
  const std::int64_t p1 = process_cpu_ns(), w1 = now_ns();
  emit(Impl::kName, "idle_cpu_ms_per_s_no_timer", 0, (p1 - p0) / 1e6 / ((w1 - w0) / 1e9), "ms/s", 0,
       {{"note", "process baseline with no timer"}});
  for (std::int64_t tick_ms : o.idle_ticks) {
    const std::string name = thread_name("idle");
    Impl t(tick_ms, o.wheel, name);
    t.start();
    sleep_ms(300);
    const std::int64_t pc0 = process_cpu_ns(), tc0 = thread_cpu_ns(name), a = now_ns();
    sleep_ms(sleep);
    const std::int64_t pc1 = process_cpu_ns(), tc1 = thread_cpu_ns(name), b = now_ns();
    const double secs = (b - a) / 1e9;
    emit(Impl::kName, "idle_cpu_ms_per_s", 0, (pc1 - pc0) / 1e6 / secs, "ms/s", tick_ms,
         {{"scope", "process"}, {"secs", number(secs)}});
    emit(Impl::kName, "idle_worker_cpu_ms_per_s", 0, tc0 < 0 ? NAN : (tc1 - tc0) / 1e6 / secs,
         "ms/s", tick_ms, {{"scope", "worker_thread"}});
    stop_timer(t);
  }
}

// Runs the selected metrics in TimerBench's order for one timer implementation.
template <class Impl>
void run_all(const BenchOptions& o) {
  std::mt19937_64 rng(o.seed);
  if (o.wants("schedule") || o.wants("cancel") || o.wants("expire")) warm_up<Impl>(o, rng);
  for (std::int64_t tick : o.ticks) {
    if (o.wants("schedule") || o.wants("cancel")) {
      schedule_and_cancel<Impl>(o, rng, tick, o.wants("schedule"), o.wants("cancel"));
    }
    if (o.wants("expire")) expire<Impl>(o, rng, tick);
    if (o.wants("memory")) {
      // Freed nodes stay in malloc's and the node pool's free lists and would be reused
      // unseen: memory is measured in a fresh process.
      if (o.memory_child) {
        memory<Impl>(o, tick);
      } else {
        run_memory_in_fresh_process(o, Impl::kName, tick);
      }
    }
  }
  if (o.wants("lateness")) {
    for (std::int64_t tick : o.lateness_ticks) lateness<Impl>(o, rng, tick);
  }
  if (o.wants("upperlateness")) {
    for (std::int64_t tick : o.upper_ticks) upper_lateness<Impl>(o, rng, tick);
  }
  if (o.wants("idle")) idle<Impl>(o);
  if (o.wants("longdelay")) {
    for (std::int64_t tick : o.long_ticks) long_delay<Impl>(o, rng, tick);
  }
  if (o.wants("scaling")) scaling<Impl>(o, rng);
}

}  // namespace wheel::bench
