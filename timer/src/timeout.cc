// SPDX-License-Identifier: Apache-2.0
#include "wheel/timeout.h"

#include <array>
#include <exception>
#include <mutex>
#include <stdexcept>

#include <spdlog/spdlog.h>

#include "wheel/logger.h"

#include "timer_core.h"
#include "wheel/detail/task_timeout.h"

namespace wheel {

namespace detail {

namespace {
constexpr std::size_t kMaxTaskTypes = std::size_t{1} << 16;
// Written once per slot under the mutex, before the index is handed out; a node carries its
// index to other threads only through the timer's queues, which order the accesses.
std::array<const TaskOps*, kMaxTaskTypes> task_ops_table{};
std::size_t task_ops_count = 0;
std::mutex task_ops_mutex;
}  // namespace

std::uint16_t register_task_ops(const TaskOps* ops) {
  std::lock_guard lock(task_ops_mutex);
  if (task_ops_count == kMaxTaskTypes) {
    throw std::length_error("wheel: more than 65536 distinct task types");
  }
  task_ops_table[task_ops_count] = ops;
  return static_cast<std::uint16_t>(task_ops_count++);
}

const TaskOps& task_ops(std::uint16_t index) noexcept {
  return *task_ops_table[index];
}

}  // namespace detail

// A pending timeout costs a 32-byte node plus its task, and an 8-byte entry in its wheel bucket
// (on 64-bit targets).
static_assert(sizeof(void*) != 8 || sizeof(detail::TaskTimeout<void (*)()>) == 40);

bool Timeout::cancel() {
  if (try_transition(kCancelled)) {
    // Still referenced by the timer here: only the cancellation queue can retire it now.
    core_->enqueue_cancel(this);
    return true;
  }
  if (!is_periodic()) return false;
  // A periodic timeout with a run due or in progress: whoever runs it retires it (its run, if
  // not started yet, never starts). It may be re-armed (INIT) meanwhile: try again.
  for (;;) {
    std::uint8_t state = state_.load(std::memory_order_acquire);
    if (state == kInit) {
      if (try_transition(kCancelled)) {
        core_->enqueue_cancel(this);
        return true;
      }
    } else if (state == kExpired || state == kRunning) {
      if (state_.compare_exchange_strong(state, kCancelled, std::memory_order_acq_rel)) {
        return true;
      }
    } else {
      return false;
    }
  }
}

HashedWheelTimer& Timeout::timer() const {
  return core_->owner();
}

void Timeout::invoke_guarded() noexcept {
  const detail::TimerCore::TaskScope scope(core_);  // new_timeout() may be called while draining
  try {
    invoke();
  } catch (const std::exception& e) {
    wheel::logger()->warn("wheel: a timer task threw an exception: {}", e.what());
  } catch (...) {
    wheel::logger()->warn("wheel: a timer task threw a non-standard exception");
  }
}

}  // namespace wheel
