// SPDX-License-Identifier: Apache-2.0
// Periodic timeouts: the re-arm after each run, on the worker or when the executor's job comes
// back through the PeriodicGate, and the gate's closing at stop().
#include <algorithm>
#include <mutex>
#include <utility>

#include "timer_core.h"

namespace wheel::detail {

bool TimerCore::rearm_periodic(Timeout* node) noexcept {
  auto* periodic = static_cast<PeriodicTimeout*>(node);
  periodic->deadline_ns_ = next_periodic_deadline(periodic->deadline_ns_, periodic->period_ns_,
                                                  tick_.count(), elapsed_ns());
  // RUNNING: no cancel() can put its link here now.
  node->deadline_or_link_.store(std::max<std::int64_t>(periodic->deadline_ns_, 0),
                                std::memory_order_relaxed);
  node->place_ = Timeout::kInQueue;
  return node->try_transition(Timeout::kInit, Timeout::kRunning);
}

void TimerCore::run_periodic_here(Timeout* node) {
  // Claiming the run fails only when cancel() came first: then no run starts.
  if (node->try_transition(Timeout::kRunning, Timeout::kExpired)) {
    node->invoke_guarded();
    // Armed only now that the run has returned, so runs never overlap. The node goes round
    // the backlog, as a new timeout would, whatever the wheel's layout.
    if (rearm_periodic(node)) {
      backlog_.push_back(node);
      return;
    }
  }
  // Cancelled before its run started or while it ran: it ends here.
  node->retire();
  count_out(1);
}

bool PeriodicGate::take_back(Timeout* node, bool ran) {
  std::lock_guard lock(mutex);
  return core != nullptr && core->take_back_periodic(node, ran);
}

bool TimerCore::take_back_periodic(Timeout* node, bool ran) noexcept {
  --gate_->out;
  if (ran && rearm_periodic(node)) {
    submissions_.push(node);
    wake_if_sleeping(kWakeForSubmit);
    return true;
  }
  count_out(1);  // the job's end retires it (TimerJob::finish_periodic)
  return false;
}

void TimerCore::close_gate() {
  std::lock_guard lock(gate_->mutex);
  if (gate_->core == nullptr) return;
  gate_->core = nullptr;
  // Periodic jobs still at the executor leave the count now; they retire by themselves.
  if (gate_->out > 0) count_out(std::exchange(gate_->out, 0));
}

}  // namespace wheel::detail
