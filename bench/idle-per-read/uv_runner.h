// SPDX-License-Identifier: Apache-2.0
// A libuv loop for the wheel and libuv implementations of wheel-idle-bench: runs it for a while
// with an optional 1 ms callback, or runs one callback and what it made ready.
#pragma once

#include <uv.h>

#include <functional>

#include "uv_loop.h"

namespace wheel::bench {

class UvRunner {
 public:
  // The loop is initialised here and, on destruction, every handle still open on it is
  // closed, then the loop (UvLoop); throws std::system_error when libuv cannot make it.
  UvRunner() = default;

  uv_loop_t* loop() { return loop_.get(); }
  // Runs the loop for `secs`, calling `every_ms` (if set) every millisecond.
  void run_for(double secs, const std::function<void()>& every_ms);
  // Calls `fn` from the loop, then runs the loop without blocking until nothing is ready.
  void run_once_then_drain(const std::function<void()>& fn);

 private:
  UvLoop loop_;
};

}  // namespace wheel::bench
