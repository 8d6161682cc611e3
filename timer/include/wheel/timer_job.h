// A TimerJob is an expired timeout's task, packaged for a TimerOptions::executor: the timer's
// worker hands one over instead of running the task itself, so slow tasks cannot stall the
// wheel.
#pragma once

#include <utility>

#include "wheel/timeout.h"

namespace wheel {

class TimerJob {
 public:
  TimerJob(TimerJob&& other) noexcept : node_(std::exchange(other.node_, nullptr)) {}
  TimerJob& operator=(TimerJob&& other) noexcept {
    if (this != &other) {
      discard();
      node_ = std::exchange(other.node_, nullptr);
    }
    return *this;
  }
  TimerJob(const TimerJob&) = delete;
  TimerJob& operator=(const TimerJob&) = delete;
  // A job destroyed unrun destroys its task without running it.
  ~TimerJob() { discard(); }

  // Runs the task once (an exception it throws is caught and logged), then destroys the task.
  // Later calls do nothing. Safe from any one thread at a time; the task runs on that thread.
  void operator()();

  // The timeout this job belongs to (already expired); null after the job ran.
  Timeout* timeout() const noexcept { return node_; }

 private:
  friend class detail::TimerCore;
  explicit TimerJob(Timeout* node) noexcept : node_(node) {}  // takes over the timer's reference
  void discard() noexcept;

  Timeout* node_;
};

}  // namespace wheel
