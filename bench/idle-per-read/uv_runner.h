// SPDX-License-Identifier: Apache-2.0
// A libuv loop for the wheel and libuv implementations of wheel-idle-bench: runs it for a while
// with an optional 1 ms callback, or runs one callback and what it made ready, and counts its
// iterations.
#pragma once

#include <uv.h>

#include <atomic>
#include <cstdint>
#include <functional>

#include "uv_loop.h"

namespace wheel::bench {

class UvRunner {
 public:
  // The loop is initialised here and, on destruction, every handle still open on it is
  // closed, then the loop (UvLoop); throws std::system_error when libuv cannot make it.
  UvRunner();

  uv_loop_t* loop() { return loop_.get(); }
  // Runs the loop for `secs`, calling `every_ms` (if set) every millisecond.
  void run_for(double secs, const std::function<void()>& every_ms);
  // Calls `fn` from the loop, then runs the loop without blocking until nothing is ready.
  void run_once_then_drain(const std::function<void()>& fn);
  // Loop iterations so far (a check handle's calls: one per pass, after the poll for I/O).
  // Safe from any thread.
  std::int64_t iterations() const { return iterations_.load(std::memory_order_relaxed); }

 private:
  // Before loop_, so that they outlive the loop's closing of every handle.
  uv_check_t check_;
  std::atomic<std::int64_t> iterations_{0};
  UvLoop loop_;
};

}  // namespace wheel::bench
