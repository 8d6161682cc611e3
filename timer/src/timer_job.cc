// SPDX-License-Identifier: Apache-2.0
#include "wheel/timer_job.h"

#include "periodic_gate.h"
#include "wheel/detail/task_timeout.h"

namespace wheel {

void TimerJob::operator()() {
  Timeout* node = std::exchange(node_, nullptr);
  if (node == nullptr) return;
  if (node->place_ == Timeout::kAtExecutor) {  // periodic: its run may have been cancelled
    const bool ran = node->try_transition(Timeout::kRunning, Timeout::kExpired);
    if (ran) node->invoke_guarded();
    finish_periodic(node, ran);
    return;
  }
  node->invoke_guarded();
  node->retire();
}

void TimerJob::discard() noexcept {
  Timeout* node = std::exchange(node_, nullptr);
  if (node == nullptr) return;
  if (node->place_ == Timeout::kAtExecutor) {
    finish_periodic(node, false);
  } else {
    node->retire();
  }
}

void TimerJob::finish_periodic(Timeout* node, bool ran) noexcept {
  auto* periodic = static_cast<detail::PeriodicTimeout*>(node);
  if (periodic->gate_->take_back(node, ran)) return;
  // Cancelled, dropped unrun, or its timer stopped: the periodic timeout ends, cancelled.
  node->try_transition(Timeout::kCancelled, ran ? Timeout::kRunning : Timeout::kExpired);
  node->retire();
}

}  // namespace wheel
