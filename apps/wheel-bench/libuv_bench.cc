// SPDX-License-Identifier: Apache-2.0
#include "libuv_bench.h"

#include <uv.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_report.h"
#include "timer_metrics.h"
#include "uv_loop.h"

namespace wheel::bench {

namespace {

constexpr const char* kImpl = "libuv";

// libuv takes whole milliseconds; round up so a timer is never asked to fire early.
std::uint64_t to_ms(std::int64_t ns) {
  return static_cast<std::uint64_t>((ns + kMs - 1) / kMs);
}

void noop(uv_timer_t*) {}

struct Counter {
  std::int64_t target;
  std::int64_t fired = 0;
  std::int64_t done_at = 0;
};

void count_cb(uv_timer_t* t) {
  auto* c = static_cast<Counter*>(t->loop->data);
  if (++c->fired == c->target) c->done_at = now_ns();
}

void schedule_and_cancel(const BenchOptions& o, std::mt19937_64& rng, std::int64_t tick_ms,
                         bool report_schedule, bool report_cancel) {
  const auto n = static_cast<std::size_t>(o.n);
  const auto d = random_delays(rng, n, 1 * kSec, 60 * kSec);
  UvLoop loop;
  std::unique_ptr<uv_timer_t[]> timers(new uv_timer_t[n]);
  for (std::size_t i = 0; i < n; ++i) uv_timer_init(loop.get(), &timers[i]);
  uv_update_time(loop.get());
  const std::int64_t s0 = now_ns();
  for (std::size_t i = 0; i < n; ++i) uv_timer_start(&timers[i], noop, to_ms(d[i]), 0);
  const std::int64_t s1 = now_ns();
  if (report_schedule) {
    emit(kImpl, "schedule_ops_per_s", o.n, o.n / ((s1 - s0) / 1e9), "ops/s", tick_ms,
         {{"elapsed_ms", number((s1 - s0) / 1e6)}, {"thread", "loop thread only"}});
  }
  const std::int64_t c0 = now_ns();
  for (std::size_t i = 0; i < n; ++i) uv_timer_stop(&timers[i]);
  const std::int64_t c1 = now_ns();
  if (report_cancel) {
    emit(kImpl, "cancel_ops_per_s", o.n, o.n / ((c1 - c0) / 1e9), "ops/s", tick_ms,
         {{"elapsed_ms", number((c1 - c0) / 1e6)}});
    emit(kImpl, "cancel_drain_ms", o.n, 0, "ms", tick_ms,
         {{"note", "uv_timer_stop is synchronous"}});
  }
  for (std::size_t i = 0; i < n; ++i) uv_close(reinterpret_cast<uv_handle_t*>(&timers[i]), nullptr);
  uv_run(loop.get(), UV_RUN_DEFAULT);
}

void expire(const BenchOptions& o, std::mt19937_64& rng, std::int64_t tick_ms) {
  const auto n = static_cast<std::size_t>(o.n);
  const auto d = random_delays(rng, n, 0, 1000 * kMs);
  const std::int64_t max_delay = *std::max_element(d.begin(), d.end());
  UvLoop loop;
  Counter counter{o.n};
  loop.get()->data = &counter;
  std::unique_ptr<uv_timer_t[]> timers(new uv_timer_t[n]);
  for (std::size_t i = 0; i < n; ++i) uv_timer_init(loop.get(), &timers[i]);
  uv_update_time(loop.get());
  const std::int64_t t0 = now_ns();
  for (std::size_t i = 0; i < n; ++i) uv_timer_start(&timers[i], count_cb, to_ms(d[i]), 0);
  const std::int64_t t1 = now_ns();
  uv_run(loop.get(), UV_RUN_DEFAULT);
  const double wall_s = (counter.done_at - t0) / 1e9;
  emit(kImpl, "expire_ops_per_s", o.n, o.n / wall_s, "ops/s", tick_ms,
       {{"wall_ms", number(wall_s * 1e3)},
        {"schedule_ms", number((t1 - t0) / 1e6)},
        {"max_delay_ms", number(max_delay / 1e6)}});
  emit(kImpl, "expire_overrun_ms", o.n, (counter.done_at - (t1 + max_delay)) / 1e6, "ms", tick_ms);
  for (std::size_t i = 0; i < n; ++i) uv_close(reinterpret_cast<uv_handle_t*>(&timers[i]), nullptr);
  uv_run(loop.get(), UV_RUN_DEFAULT);
}

// The uv_timer_t array is the caller's node storage, so it is counted, not subtracted.
void memory(const BenchOptions& o, std::int64_t tick_ms) {
  const auto n = static_cast<std::size_t>(o.n);
  UvLoop loop;
  const std::int64_t used1 = heap_in_use();
  std::unique_ptr<uv_timer_t[]> timers(new uv_timer_t[n]);
  for (std::size_t i = 0; i < n; ++i) {
    uv_timer_init(loop.get(), &timers[i]);
    uv_timer_start(&timers[i], noop, 3'600'000, 0);
  }
  const std::int64_t used2 = heap_in_use();
  emit(kImpl, "bytes_per_pending_timeout", o.n, double(used2 - used1) / o.n, "bytes", tick_ms,
       {{"ref_array_subtracted", false}, {"note", "caller-allocated uv_timer_t array"}});
  emit(kImpl, "bytes_per_pending_timeout_incl_ref_array", o.n, double(used2 - used1) / o.n, "bytes",
       tick_ms, {{"ref_array_subtracted", false}});
  for (std::size_t i = 0; i < n; ++i) uv_close(reinterpret_cast<uv_handle_t*>(&timers[i]), nullptr);
  uv_run(loop.get(), UV_RUN_DEFAULT);
}

struct LateTimer {
  uv_timer_t handle;
  std::int64_t deadline;
  std::int64_t* late;
};

void lateness(const BenchOptions& o, std::mt19937_64& rng, std::int64_t tick_ms) {
  const auto m = static_cast<std::size_t>(o.lateness_n);
  std::vector<std::int64_t> late(m);
  const auto d = random_delays(rng, m, 10 * kMs, 2000 * kMs + 1);
  UvLoop loop;
  std::unique_ptr<LateTimer[]> timers(new LateTimer[m]);
  for (std::size_t i = 0; i < m; ++i) {
    uv_timer_init(loop.get(), &timers[i].handle);
    timers[i].handle.data = &timers[i];
    timers[i].late = &late[i];
    // A fresh loop time for each start, as a callback that schedules would see it.
    uv_update_time(loop.get());
    timers[i].deadline = now_ns() + d[i];
    uv_timer_start(
        &timers[i].handle,
        [](uv_timer_t* h) {
          auto* t = static_cast<LateTimer*>(h->data);
          *t->late = now_ns() - t->deadline;
        },
        to_ms(d[i]), 0);
  }
  uv_run(loop.get(), UV_RUN_DEFAULT);
  for (std::size_t i = 0; i < m; ++i) {
    uv_close(reinterpret_cast<uv_handle_t*>(&timers[i].handle), nullptr);
  }
  uv_run(loop.get(), UV_RUN_DEFAULT);
  emit_lateness(kImpl, std::move(late), tick_ms);
}

void scaling(const BenchOptions& o, std::mt19937_64& rng) {
  for (std::int64_t count : o.scaling_n) {
    const auto n = static_cast<std::size_t>(count);
    const auto d = random_delays(rng, n, 1 * kSec, 60 * kSec);
    std::vector<std::uint32_t> order(n);
    for (std::size_t i = 0; i < n; ++i) order[i] = static_cast<std::uint32_t>(i);
    std::shuffle(order.begin(), order.end(), rng);
    UvLoop loop;
    std::unique_ptr<uv_timer_t[]> timers(new uv_timer_t[n]);
    for (std::size_t i = 0; i < n; ++i) uv_timer_init(loop.get(), &timers[i]);
    for (std::size_t i = 0; i < n; ++i) uv_timer_start(&timers[i], noop, to_ms(d[i]), 0);
    for (std::size_t i = 0; i < n; ++i) uv_timer_stop(&timers[i]);  // untimed warm-up round
    uv_update_time(loop.get());
    const std::int64_t s0 = now_ns();
    for (std::size_t i = 0; i < n; ++i) uv_timer_start(&timers[i], noop, to_ms(d[i]), 0);
    const std::int64_t s1 = now_ns();
    for (std::uint32_t i : order) uv_timer_stop(&timers[i]);
    const std::int64_t c1 = now_ns();
    const double sched_ns = double(s1 - s0) / count, cancel_ns = double(c1 - s1) / count;
    const nlohmann::ordered_json extra = {{"order", "cancel in random order"}};
    emit(kImpl, "scaling_schedule_ns_per_op", count, sched_ns, "ns", o.scaling_tick, extra);
    emit(kImpl, "scaling_cancel_ns_per_op", count, cancel_ns, "ns", o.scaling_tick, extra);
    emit(kImpl, "scaling_schedule_cancel_ns_per_op", count, sched_ns + cancel_ns, "ns",
         o.scaling_tick, {{"cancel_drain_ms", 0}});
    for (std::size_t i = 0; i < n; ++i)
      uv_close(reinterpret_cast<uv_handle_t*>(&timers[i]), nullptr);
    uv_run(loop.get(), UV_RUN_DEFAULT);
  }
}

}  // namespace

void run_libuv(const BenchOptions& o) {
  std::mt19937_64 rng(o.seed);
  for (std::int64_t tick : o.ticks) {
    if (o.wants("schedule") || o.wants("cancel")) {
      schedule_and_cancel(o, rng, tick, o.wants("schedule"), o.wants("cancel"));
    }
    if (o.wants("expire")) expire(o, rng, tick);
    if (o.wants("memory")) memory(o, tick);
  }
  if (o.wants("lateness")) {
    for (std::int64_t tick : o.lateness_ticks) lateness(o, rng, tick);
  }
  if (o.wants("idle")) log_line("libuv: idle skipped (no timer thread; an idle loop blocks)");
  if (o.wants("scaling")) scaling(o, rng);
}

}  // namespace wheel::bench
