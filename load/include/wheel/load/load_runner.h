// SPDX-License-Identifier: Apache-2.0
// One process's share of a wheel-load run, on one libuv loop: opens the connections at the
// configured rate from the source addresses, pings the active ones, watches the idle ones get
// closed, and at the end of the duration sends QUIT and closes what is left.
//
// Threads: everything runs on the thread that calls run(); there are no others. Each
// connection is a small state machine (see src/connection.h); nothing is allocated per PING.
#pragma once

#include <memory>

#include "wheel/load/load_config.h"
#include "wheel/load/load_result.h"
#include "wheel/load/progress.h"

namespace wheel::load {

class RunnerCore;  // src/runner_core.h

class LoadRunner {
 public:
  using ProgressCallback = wheel::load::ProgressCallback;  // progress.h

  // `config` describes this process's share (first_index, share, connect_rate of its own).
  // `on_progress` is called on the loop thread about once a second and once at the end.
  // `stop_fd`, if not -1, is watched by the loop: once it is readable (StopSignals' pipe: one
  // byte, the signal's number) the run stops early as if --duration had ended, and the result
  // says it was interrupted by that signal. The runner reads from it but never closes it.
  LoadRunner(LoadConfig config, ProgressCallback on_progress, int stop_fd = -1);
  ~LoadRunner();
  LoadRunner(const LoadRunner&) = delete;
  LoadRunner& operator=(const LoadRunner&) = delete;

  // Runs the share to the end of config.duration plus a short QUIT grace (<= 1 s), then closes
  // every connection. Connect failures, EMFILE, refusals and resets are counted, never thrown.
  // The run ends early (LoadResult says why) on stop_fd, about 1 s after the server's first
  // "BYE shutdown", or once no connection could be made: every attempt failed, none is under
  // way, and either every connection was tried or the failures went on for 1 s.
  // Returns the result of this share. Call once.
  // Throws std::runtime_error if the loop itself cannot be set up.
  LoadResult run();

 private:
  std::unique_ptr<RunnerCore> core_;
};

}  // namespace wheel::load
