// SPDX-License-Identifier: Apache-2.0
// TimerOptions::tick_observer: one observation per processed tick (none while the worker sleeps),
// on the worker thread, never negative, showing a blocked worker as lag; in both layouts.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "support/timer_layouts.h"
#include "wheel/hashed_wheel_timer.h"

namespace {

using namespace std::chrono_literals;

class TickObserverTest : public ::testing::TestWithParam<wheel::TimerLayout> {
 protected:
  struct Seen {
    std::mutex mutex;
    std::vector<std::chrono::nanoseconds> lags;
    std::vector<std::thread::id> threads;
    std::size_t size() {
      std::lock_guard lock(mutex);
      return lags.size();
    }
  };

  wheel::TimerOptions options(Seen* seen) const {
    wheel::TimerOptions o;
    o.tick_duration = 10ms;
    o.layout = GetParam();
    o.tick_observer = [seen](std::chrono::nanoseconds lag) {
      std::lock_guard lock(seen->mutex);
      seen->lags.push_back(lag);
      seen->threads.push_back(std::this_thread::get_id());
    };
    return o;
  }

  static bool wait_until(const std::function<bool()>& done, std::chrono::seconds limit = 20s) {
    const auto start = std::chrono::steady_clock::now();
    while (!done()) {
      if (std::chrono::steady_clock::now() - start > limit) return false;
      std::this_thread::sleep_for(5ms);
    }
    return true;
  }
};

TEST_P(TickObserverTest, ObservesEachWakeUpThatExpiresSomethingAndNothingWhileIdle) {
  Seen seen;
  std::atomic<int> fired{0};
  std::thread::id worker;
  {
    wheel::HashedWheelTimer timer(options(&seen));
    // Three timeouts far apart: each needs a wake-up of its own.
    for (const auto delay : {30ms, 200ms, 400ms}) {
      timer.new_timeout(
          [&] {
            worker = std::this_thread::get_id();
            fired.fetch_add(1);
          },
          delay);
    }
    ASSERT_TRUE(wait_until([&] { return fired.load() == 3; }));
    const std::size_t after_fired = seen.size();
    EXPECT_GE(after_fired, 3u);
    // Nothing pending: the worker sleeps, and nothing more is observed.
    std::this_thread::sleep_for(300ms);
    EXPECT_EQ(seen.size(), after_fired);
  }
  std::lock_guard lock(seen.mutex);
  for (std::size_t i = 0; i < seen.lags.size(); ++i) {
    EXPECT_GE(seen.lags[i].count(), 0);
    EXPECT_EQ(seen.threads[i], worker) << "observed off the worker thread";
  }
}

TEST_P(TickObserverTest, AWorkerBlockedByATaskShowsAsLagOfTheNextWakeUp) {
  Seen seen;
  std::atomic<bool> late_fired{false};
  {
    wheel::HashedWheelTimer timer(options(&seen));
    timer.new_timeout([] { std::this_thread::sleep_for(300ms); }, 20ms);  // blocks the worker
    timer.new_timeout([&] { late_fired = true; }, 60ms);                  // due while it is blocked
    ASSERT_TRUE(wait_until([&] { return late_fired.load(); }));
  }
  std::lock_guard lock(seen.mutex);
  std::chrono::nanoseconds worst{0};
  for (const auto lag : seen.lags) worst = std::max(worst, lag);
  // The 60 ms timeout's tick was processed after the 300 ms task returned (>= 320 ms): at
  // least ~250 ms late, however slow the machine.
  EXPECT_GE(worst, 200ms);
}

INSTANTIATE_TEST_SUITE_P(Layouts, TickObserverTest, wheel::testing::kLayouts,
                         wheel::testing::layout_name);

}  // namespace
