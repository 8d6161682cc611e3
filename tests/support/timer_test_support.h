// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the timer tests: polling waits, log capture, worker-thread inspection.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <spdlog/logger.h>
#include <spdlog/sinks/ringbuffer_sink.h>

#include "support/wait_until.h"

namespace wheel::testing {

using Clock = std::chrono::steady_clock;

// Polls `done` every millisecond until it returns true or `limit` passes (support/wait_until.h).
using wheel_test::wait_until;

// Calls `call` and tells how it ended: 1 if it returned, 2 if it threw std::logic_error (any
// other exception goes on). Tests keep it in an atomic where 0 means "not yet".
template <class Call>
int outcome_of(Call&& call) {
  try {
    call();
    return 1;
  } catch (const std::logic_error&) {
    return 2;
  }
}

// Replaces wheeltimer's logger (wheel::set_logger) for its lifetime and records what is logged.
class LogCapture {
 public:
  LogCapture();
  ~LogCapture();
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  // Lines logged so far at `level` or above that contain `needle`.
  int count(const std::string& needle,
            spdlog::level::level_enum level = spdlog::level::trace) const;

 private:
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
  std::shared_ptr<spdlog::logger> previous_;
};

// The kernel thread id of this process's thread named `name` (as `top -H` shows it), if any.
std::optional<int> find_thread(const std::string& name);

// Voluntary context switches of thread `tid` so far: how often it went to sleep.
std::int64_t voluntary_switches(int tid);

}  // namespace wheel::testing
