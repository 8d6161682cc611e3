// SPDX-License-Identifier: Apache-2.0
#include "wheel/load/load_runner.h"

#include "runner_core.h"

namespace wheel::load {

LoadRunner::LoadRunner(LoadConfig config, ProgressCallback on_progress, int stop_fd)
    : core_(std::make_unique<RunnerCore>(std::move(config), std::move(on_progress), stop_fd)) {}

LoadRunner::~LoadRunner() = default;

LoadResult LoadRunner::run() {
  return core_->run();
}

}  // namespace wheel::load
