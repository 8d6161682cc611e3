// SPDX-License-Identifier: Apache-2.0
#include "wheel/net/loop_timer.h"

#include "loop_executor.h"

namespace wheel::net {

LoopTimer::LoopTimer(uv_loop_t* loop, TimerOptions options)
    : loop_(loop), executor_(LoopExecutor::create(loop)) {
  options.executor = [executor = executor_](TimerJob job) {
    executor->post(std::move(job));  // timer thread -> loop thread
  };
  try {
    timer_ = std::make_unique<HashedWheelTimer>(std::move(options));
  } catch (...) {
    executor_->close();
    throw;
  }
}

LoopTimer::~LoopTimer() {
  close();
}

bool LoopTimer::cancel(const TimeoutHandle& timeout) {
  cancels_.fetch_add(1, std::memory_order_relaxed);
  return timeout && timeout->cancel();
}

void LoopTimer::close() {
  if (closed_) return;
  closed_ = true;
  timer_->stop();      // joins the worker: nothing posts any more; unrun tasks destroyed here
  executor_->close();  // destroys the queued jobs unrun, closes the async handle
}

}  // namespace wheel::net
