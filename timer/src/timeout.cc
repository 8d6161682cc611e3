#include "wheel/timeout.h"

#include <exception>

#include <spdlog/spdlog.h>

#include "timer_core.h"
#include "wheel/timer_job.h"

namespace wheel {

bool Timeout::cancel() {
  if (!try_transition(kCancelled)) return false;
  // Still referenced by the timer here: only the cancellation queue can retire it now.
  core_->enqueue_cancel(this);
  return true;
}

HashedWheelTimer& Timeout::timer() const {
  return core_->owner();
}

void Timeout::invoke_guarded() noexcept {
  try {
    invoke();
  } catch (const std::exception& e) {
    spdlog::warn("wheel: a timer task threw an exception: {}", e.what());
  } catch (...) {
    spdlog::warn("wheel: a timer task threw a non-standard exception");
  }
}

void TimerJob::operator()() {
  if (node_ != nullptr) detail::TimerCore::run_and_release(std::exchange(node_, nullptr));
}

void TimerJob::discard() noexcept {
  if (node_ != nullptr) detail::TimerCore::discard_and_release(std::exchange(node_, nullptr));
}

}  // namespace wheel
