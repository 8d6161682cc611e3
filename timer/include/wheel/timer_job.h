// SPDX-License-Identifier: Apache-2.0
// A TimerJob is a timeout's task packaged to be run later, by whoever holds the job:
//   * a TimerOptions::executor receives one for each expired task, so slow tasks cannot stall
//     the wheel's worker;
//   * HashedWheelTimer::stop() returns one for each timeout that never ran, so the caller may
//     run, persist or hand over the work (as Netty's Timeout.task()) or simply drop it.
// Running a job runs its task once, on the calling thread; destroying a job unrun destroys the
// task without running it. Either way nothing leaks.
//
// TimerJob is move-only (so are the tasks it may hold). A thread pool whose queue holds
// std::function<void()> needs a copyable callable; wrap the job in a shared_ptr:
//     auto shared = std::make_shared<wheel::TimerJob>(std::move(job));
//     pool.post([shared] { (*shared)(); });
// (examples/executor_pool.cc shows a whole std::function-based executor doing this.)
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
  // A job destroyed unrun destroys its task without running it. For a periodic timeout's job
  // from the executor, that ends the periodic timeout: it becomes cancelled.
  ~TimerJob() { discard(); }

  // Runs the task once (an exception it throws is caught and logged), then destroys the task,
  // except that a periodic timeout's job from the executor re-arms its timeout for the next
  // period instead (see HashedWheelTimer::new_periodic). Later calls do nothing.
  // Safe from any one thread at a time; the task runs on that thread.
  void operator()();

  // The timeout this job belongs to (expired for an executor's job, cancelled for one returned
  // by stop()); null after the job ran or was moved from.
  Timeout* timeout() const noexcept { return node_; }
  // A new handle to that timeout (empty after the job ran): keeps the Timeout readable after
  // the job is gone, as new_timeout()'s handle does.
  TimeoutHandle handle() const noexcept {
    if (node_ == nullptr) return {};
    node_->add_ref();
    return TimeoutHandle(node_, TimeoutHandle::Adopt{});
  }

 private:
  friend class detail::TimerCore;
  explicit TimerJob(Timeout* node) noexcept : node_(node) {}  // takes over the timer's reference
  void discard() noexcept;
  // A periodic job back from the executor (ran: whether its run happened): its timer re-arms
  // it, or it ends here, cancelled.
  static void finish_periodic(Timeout* node, bool ran) noexcept;

  Timeout* node_;
};

}  // namespace wheel
