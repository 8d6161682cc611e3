// SPDX-License-Identifier: Apache-2.0
// WorkerHold: keeps a timer's worker thread inside a task of its own until released. A worker
// runs one task at a time, so while it is held nothing else of that timer expires or runs: a
// test can schedule and cancel short real-clock timeouts without racing the worker, however
// late the scheduler runs the test thread.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>

#include "wait_until.h"

namespace wheel_test {

class WorkerHold {
 public:
  // Schedules the holding task on `timer` (a HashedWheelTimer or HeapTimer without executor)
  // `delay` from now and waits, bounded, until the worker runs it. The task itself gives up
  // after wait_until()'s bound, so a failed test cannot hang.
  template <class Timer>
  WorkerHold(Timer& timer, std::chrono::nanoseconds delay) : state_(std::make_shared<State>()) {
    timer.new_timeout(
        [state = state_] {
          state->holding = true;
          wait_until([&] { return state->released.load(); });
        },
        delay);
    holding_ = wait_until([&] { return state_->holding.load(); });
  }
  ~WorkerHold() { release(); }
  WorkerHold(const WorkerHold&) = delete;
  WorkerHold& operator=(const WorkerHold&) = delete;

  // Whether the worker reached the holding task within wait_until()'s bound.
  bool holding() const { return holding_; }
  // Lets the worker go on. Calling it again does nothing.
  void release() { state_->released = true; }

 private:
  struct State {
    std::atomic<bool> holding{false};
    std::atomic<bool> released{false};
  };
  std::shared_ptr<State> state_;  // shared with the task, which may outlive this object
  bool holding_ = false;
};

}  // namespace wheel_test
