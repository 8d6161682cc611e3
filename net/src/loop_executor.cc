#include "loop_executor.h"

#include <system_error>

namespace wheel::net {

LoopExecutor::LoopExecutor(uv_loop_t* loop) {
  const int rc = uv_async_init(loop, &async_, &LoopExecutor::on_async);
  if (rc != 0) throw std::system_error(-rc, std::generic_category(), "uv_async_init");
  async_.data = this;
}

void LoopExecutor::post(TimerJob job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) return;  // `job` is destroyed unrun
    queue_.push_back(std::move(job));
  }
  // Outside the lock: the loop may run the batch before we return; that is fine.
  uv_async_send(&async_);
}

void LoopExecutor::run_pending() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    running_.swap(queue_);
  }
  // Jobs may post more (a task scheduling a 0 ms timeout goes through the timer first, so in
  // practice they do not); those wait for the next wake-up.
  for (TimerJob& job : running_) job();
  running_.clear();
}

void LoopExecutor::close() {
  run_pending();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
    queue_.clear();
  }
  uv_close(reinterpret_cast<uv_handle_t*>(&async_), nullptr);
}

void LoopExecutor::on_async(uv_async_t* async) {
  static_cast<LoopExecutor*>(async->data)->run_pending();
}

}  // namespace wheel::net
