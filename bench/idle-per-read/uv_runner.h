// SPDX-License-Identifier: Apache-2.0
// A libuv loop for the wheel and libuv implementations of wheel-idle-bench: runs it for a while
// with an optional 1 ms callback, or runs one callback and what it made ready.
#pragma once

#include <uv.h>

#include <functional>

namespace wheel::bench {

class UvRunner {
 public:
  UvRunner();
  // Closes every handle still open on the loop, then the loop.
  ~UvRunner();
  UvRunner(const UvRunner&) = delete;
  UvRunner& operator=(const UvRunner&) = delete;

  uv_loop_t* loop() { return &loop_; }
  // Runs the loop for `secs`, calling `every_ms` (if set) every millisecond.
  void run_for(double secs, const std::function<void()>& every_ms);
  // Calls `fn` from the loop, then runs the loop without blocking until nothing is ready.
  void run_once_then_drain(const std::function<void()>& fn);

 private:
  uv_loop_t loop_{};
};

}  // namespace wheel::bench
