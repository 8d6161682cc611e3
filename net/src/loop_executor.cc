// SPDX-License-Identifier: Apache-2.0
#include "loop_executor.h"

#include <string>
#include <system_error>

namespace wheel::net {

LoopExecutor* LoopExecutor::create(uv_loop_t* loop) {
  auto* self = new LoopExecutor;
  const int rc = uv_async_init(loop, &self->async_, &LoopExecutor::on_async);
  if (rc != 0) {
    delete self;
    throw std::system_error(-rc, std::generic_category(),
                            std::string("uv_async_init (") + uv_err_name(rc) + ")");
  }
  self->async_.data = self;
  return self;
}

void LoopExecutor::post(TimerJob job) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (closed_) return;  // `job` is destroyed unrun
  queue_.push_back(std::move(job));
  // Under the lock, so that close() cannot free the handle between the check and the send.
  uv_async_send(&async_);
}

void LoopExecutor::run_pending() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    running_.swap(queue_);
  }
  // Jobs that post more (through the timer) wait for the next wake-up.
  for (TimerJob& job : running_) job();
  running_.clear();
}

void LoopExecutor::close() {
  std::vector<TimerJob> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
    dropped.swap(queue_);
  }
  dropped.clear();  // destroys the tasks unrun, here on the loop thread
  uv_close(reinterpret_cast<uv_handle_t*>(&async_),
           [](uv_handle_t* h) { delete static_cast<LoopExecutor*>(h->data); });
}

void LoopExecutor::on_async(uv_async_t* async) {
  static_cast<LoopExecutor*>(async->data)->run_pending();
}

}  // namespace wheel::net
