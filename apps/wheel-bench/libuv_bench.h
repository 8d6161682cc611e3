// SPDX-License-Identifier: Apache-2.0
// The metrics of timer_metrics.h for libuv's own timers (uv_timer_t: a min-heap on the loop
// thread, caller-allocated handles, millisecond resolution). libuv timers are not thread-safe,
// so everything runs on the loop thread; cancel is synchronous (cancel_drain_ms is 0) and there
// is no timer thread to idle (the idle metric is skipped).
#pragma once

#include "bench_options.h"

namespace wheel::bench {

// Runs the selected metrics for libuv; lines carry "impl":"libuv".
void run_libuv(const BenchOptions& o);

}  // namespace wheel::bench
