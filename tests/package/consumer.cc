// SPDX-License-Identifier: Apache-2.0
// Schedules one timeout through an installed or embedded wheel::timer and waits for it.
#include <chrono>
#include <cstdio>
#include <latch>

#include <wheel/hashed_wheel_timer.h>

int main() {
  using namespace std::chrono_literals;
  wheel::HashedWheelTimer timer;
  std::latch fired(1);
  timer.new_timeout([&] { fired.count_down(); }, 10ms);
  fired.wait();
  std::puts("consumer: timeout fired");
  return 0;
}
