// SPDX-License-Identifier: Apache-2.0
// Runs a whole wheel-load run in this process or, past the open-file limit of one process,
// across child processes, and merges what they measured into one result.
#pragma once

#include "wheel/load/load_config.h"
#include "wheel/load/load_result.h"
#include "wheel/load/progress.h"

namespace wheel::load {

// Runs `config` (the whole run: first_index 0, share == connections, connect_rate for the
// whole run) in `processes` processes. With 1, runs in this process. With more, forks that many
// children, each running an even slice of the connection indices at connect_rate / processes
// with its own libuv loop, and reads their progress and results through one pipe each.
// Prints a progress line on stderr about once a second (summed over the children), and hands
// the same figures to `on_progress` when given (on this thread).
// Returns the merged result; a child that dies without a result has its whole slice counted as
// connect errors of kind "child_failed".
// REQUIRES: no libuv loop or other thread is running in this process (fork).
LoadResult run_load(const LoadConfig& config, unsigned processes,
                    const ProgressCallback& on_progress = {});

}  // namespace wheel::load
