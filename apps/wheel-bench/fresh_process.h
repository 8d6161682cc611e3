// SPDX-License-Identifier: Apache-2.0
// Runs one memory measurement in a fresh wheel-bench process (/proc/self/exe), so that memory
// freed by earlier phases and kept by malloc or the timer's node pool cannot hide allocations.
// The child prints its JSON lines to the same stdout.
#pragma once

#include <cstdint>
#include <string>

#include "bench_options.h"

namespace wheel::bench {

// Runs `wheel-bench --impl <impl> --metrics memory --ticks <tick_ms> --n <o.n> --wheel <o.wheel>`
// in a child process and waits for it. Throws std::runtime_error when it fails.
void run_memory_in_fresh_process(const BenchOptions& o, const std::string& impl,
                                 std::int64_t tick_ms);

}  // namespace wheel::bench
