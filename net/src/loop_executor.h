// Internal: LoopExecutor, the hand-off from the timer's worker thread to the libuv loop.
//
// The timer's executor option calls post() on the worker thread with each expired task; post()
// pushes it onto a mutex-protected queue and wakes the loop with uv_async_send (the only libuv
// call that is safe from another thread). The loop thread then runs every queued job, in order.
#pragma once

#include <uv.h>

#include <mutex>
#include <vector>

#include "wheel/timer_job.h"

namespace wheel::net {

class LoopExecutor {
 public:
  // Initializes the async handle on `loop`. Throws std::system_error on failure.
  // Loop thread only (or before the loop runs).
  explicit LoopExecutor(uv_loop_t* loop);
  // REQUIRES: close() was called and the loop has run its close callback.
  ~LoopExecutor() = default;

  LoopExecutor(const LoopExecutor&) = delete;
  LoopExecutor& operator=(const LoopExecutor&) = delete;

  // Queues `job` to run on the loop thread and wakes the loop. After close(), the job is
  // destroyed unrun. Safe from any thread.
  void post(TimerJob job);

  // Runs every job queued so far. Loop thread only.
  void run_pending();

  // Runs what is still queued, then closes the async handle; later posts are dropped.
  // REQUIRES: nothing posts any more (the timer is stopped). Loop thread only.
  void close();

 private:
  static void on_async(uv_async_t* async);

  uv_async_t async_;
  std::mutex mutex_;
  std::vector<TimerJob> queue_;    // guarded by mutex_
  bool closed_ = false;            // guarded by mutex_
  std::vector<TimerJob> running_;  // loop thread only: the batch being run
};

}  // namespace wheel::net
