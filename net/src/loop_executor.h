// SPDX-License-Identifier: Apache-2.0
// Internal: LoopExecutor, the hand-off from a timer's worker thread to a libuv loop.
//
// post() pushes a job onto a mutex-protected queue and wakes the loop with uv_async_send (the
// only libuv call that is safe from another thread); the loop thread runs the queued jobs in
// order. The executor lives on the heap and frees itself in its handle's close callback, so its
// owner may be destroyed as soon as close() returns.
#pragma once

#include <uv.h>

#include <mutex>
#include <vector>

#include "wheel/timer_job.h"

namespace wheel::net {

class LoopExecutor {
 public:
  // Creates the executor and its async handle on `loop`. Throws std::system_error when
  // uv_async_init fails. Loop thread only (or before the loop runs).
  static LoopExecutor* create(uv_loop_t* loop);

  LoopExecutor(const LoopExecutor&) = delete;
  LoopExecutor& operator=(const LoopExecutor&) = delete;

  // Queues `job` to run on the loop thread and wakes the loop. After close(), `job` is
  // destroyed unrun. Safe from any thread.
  void post(TimerJob job);

  // Destroys every queued job unrun (on this, the loop thread), drops later posts, and closes
  // the handle; the loop frees the executor when it runs the close callback.
  // REQUIRES: nothing posts any more (the timer is stopped). Loop thread only.
  void close();

 private:
  LoopExecutor() = default;
  ~LoopExecutor() = default;
  static void on_async(uv_async_t* async);
  void run_pending();

  uv_async_t async_;
  std::mutex mutex_;
  std::vector<TimerJob> queue_;    // guarded by mutex_
  bool closed_ = false;            // guarded by mutex_
  std::vector<TimerJob> running_;  // loop thread only: the batch being run
};

}  // namespace wheel::net
