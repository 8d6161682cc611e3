// SPDX-License-Identifier: Apache-2.0
// Running a timer's tasks on a thread pool built on std::function<void()>, the most common kind.
// TimerJob is move-only and std::function needs a copyable target, so the executor wraps each
// job in a shared_ptr. Also shows a periodic heartbeat, and a drain() that lets every pending
// timeout run before the timer stops.
#include <chrono>
#include <cstdio>
#include <memory>

#include <wheel/hashed_wheel_timer.h>

#include "thread_pool.h"

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
