// SPDX-License-Identifier: Apache-2.0
// The README's embedding example, runnable: schedules a few timeouts, cancels one, and prints
// what fires and when.
#include <chrono>
#include <cstdio>
#include <latch>
#include <memory>
#include <string>

#include <wheel/hashed_wheel_timer.h>

int main() {
  using namespace std::chrono_literals;
  const auto start = std::chrono::steady_clock::now();
  const auto ms_since_start = [start] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                 start)
        .count();
  };

  wheel::TimerOptions options;
  options.tick_duration = 10ms;
  wheel::HashedWheelTimer timer(options);
  std::latch fired(3);

  for (auto delay : {50ms, 120ms, 300ms}) {
    timer.new_timeout(
        [&, delay](wheel::Timeout& self) {
          std::printf("fired: %3lld ms timeout at %3lld ms (expired=%d)\n",
                      static_cast<long long>(delay.count()),
                      static_cast<long long>(ms_since_start()), self.is_expired());
          fired.count_down();
        },
        delay);
  }
  // A move-only task, cancelled before it fires: its capture is destroyed, it never runs.
  auto message = std::make_unique<std::string>("this never prints");
  wheel::TimeoutHandle doomed =
      timer.new_timeout([m = std::move(message)] { std::puts(m->c_str()); }, 200ms);
  std::printf("cancelled 200 ms timeout: %s\n", doomed->cancel() ? "yes" : "no");

  fired.wait();
  std::printf("pending after all fired: %zu\n", timer.pending_timeouts());
  // stop() hands back the tasks that never ran, as jobs; dropping them destroys the tasks.
  std::printf("stop() returned %zu unrun jobs\n", timer.stop().size());
  return 0;
}
