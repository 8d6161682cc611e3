// SPDX-License-Identifier: Apache-2.0
// Test support: calls from a test's thread that run on an embedded server's loop thread, for
// what is loop thread only (moving a ManualClock that the server's LoopTimer reads, reading the
// handler's counters). The uv_async_t is unreferenced: it never keeps the loop running.
//
// Threads: construct and close() on the loop thread; call() from any other thread while the
// loop runs.
#pragma once

#include <uv.h>

#include <chrono>
#include <functional>
#include <future>
#include <mutex>
#include <utility>
#include <vector>

namespace wheel_test {

class LoopCalls {
 public:
  explicit LoopCalls(uv_loop_t* loop) {
    uv_async_init(loop, &async_, [](uv_async_t* a) { static_cast<LoopCalls*>(a->data)->run(); });
    async_.data = this;
    uv_unref(reinterpret_cast<uv_handle_t*>(&async_));
  }
  LoopCalls(const LoopCalls&) = delete;
  LoopCalls& operator=(const LoopCalls&) = delete;

  // Runs `f` on the loop thread and returns once it ran; false when it did not within 10 s
  // (the loop stopped or hangs).
  bool call(std::function<void()> f) {
    std::packaged_task<void()> task(std::move(f));
    std::future<void> done = task.get_future();
    {
      std::lock_guard<std::mutex> lock(mu_);
      tasks_.push_back(std::move(task));
    }
    uv_async_send(&async_);
    if (done.wait_for(std::chrono::seconds(10)) != std::future_status::ready) return false;
    done.get();  // rethrows what `f` threw
    return true;
  }

  // Closes the handle; the object must live until the loop ran once more. Loop thread only.
  void close() { uv_close(reinterpret_cast<uv_handle_t*>(&async_), nullptr); }

 private:
  void run() {
    std::vector<std::packaged_task<void()>> tasks;
    {
      std::lock_guard<std::mutex> lock(mu_);
      tasks.swap(tasks_);
    }
    for (auto& task : tasks) task();
  }

  uv_async_t async_;
  std::mutex mu_;
  std::vector<std::packaged_task<void()>> tasks_;
};

}  // namespace wheel_test
