#include <gtest/gtest.h>
#include <wheel/hashed_wheel_timer.h>
#include <atomic>
#include <thread>
using namespace std::chrono_literals;
TEST(Smoke, Fires) {
  wheel::TimerOptions o; o.tick_duration = 1ms;
  wheel::HashedWheelTimer t(o);
  std::atomic<int> n{0};
  for (int i = 0; i < 100; ++i) t.new_timeout([&] { n++; }, 5ms);
  for (int i = 0; i < 2000 && n < 100; ++i) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(n, 100);
}
