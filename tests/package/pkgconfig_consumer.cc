// SPDX-License-Identifier: Apache-2.0
// Built by check_pkgconfig.sh with only `pkg-config --cflags --libs wheeltimer`: schedules one
// timeout, waits for it, and prints the library version it was compiled against.
#include <chrono>
#include <cstdio>
#include <latch>

#include <wheel/hashed_wheel_timer.h>
#include <wheel/version.h>

int main() {
  using namespace std::chrono_literals;
  wheel::HashedWheelTimer timer;
  std::latch fired(1);
  timer.new_timeout([&] { fired.count_down(); }, 10ms);
  fired.wait();
  std::printf("pkgconfig-consumer: timeout fired, wheeltimer %s\n", wheel::kVersion);
  return 0;
}
