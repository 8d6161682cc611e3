// SPDX-License-Identifier: Apache-2.0
// Running a timer's tasks on a thread pool built on std::function<void()>, the most common kind.
// TimerJob is move-only and std::function needs a copyable target, so the executor wraps each
// job in a shared_ptr. Also shows a periodic heartbeat, and a drain() that lets every pending
// timeout run before the timer stops.
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <wheel/hashed_wheel_timer.h>

// A minimal pool: post() queues a std::function, the threads run them until the pool closes.
class ThreadPool {
 public:
  explicit ThreadPool(int threads) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
  }
  ~ThreadPool() {  // runs what is queued, then joins
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
    }
    ready_.notify_all();
    for (auto& thread : threads_) thread.join();
  }
  void post(std::function<void()> task) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(task));
    }
    ready_.notify_one();
  }

 private:
  void run() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [this] { return closed_ || !queue_.empty(); });
        if (queue_.empty()) return;
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task();
    }
  }

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> queue_;
  bool closed_ = false;
  std::vector<std::thread> threads_;
};

int main() {
  using namespace std::chrono_literals;
  ThreadPool pool(2);  // declared first: destroyed after the timer, so jobs still queued run

  wheel::TimerOptions options;
  options.tick_duration = 10ms;
  options.executor = [&pool](wheel::TimerJob job) {
    // The two-line way around "std::function target must be copy-constructible":
    auto shared = std::make_shared<wheel::TimerJob>(std::move(job));
    pool.post([shared] { (*shared)(); });
  };
  wheel::HashedWheelTimer timer(options);

  int beats = 0;  // touched by one run at a time: periodic runs never overlap
  wheel::TimeoutHandle heartbeat = timer.new_periodic(
      [&beats](wheel::Timeout& self) {
        std::printf("heartbeat %d\n", ++beats);
        if (beats == 5) self.cancel();  // a periodic timeout must be cancelled to let drain() end
      },
      0ms, 50ms);
  for (auto delay : {30ms, 90ms, 160ms}) {
    timer.new_timeout(
        [delay] { std::printf("one-shot after %lld ms\n", static_cast<long long>(delay.count())); },
        delay);
  }

  timer.drain();  // returns once the heartbeat was cancelled and every one-shot was handed over
  std::printf("drained: pending %zu, stopped %s\n", timer.pending_timeouts(),
              timer.is_stopped() ? "yes" : "no");
  return 0;
}
