// SPDX-License-Identifier: Apache-2.0
// Bounded waiting for the tests: poll a condition until it holds or a generous limit passes.
// Tests wait for events this way, never for a fixed time; the limit only ends a test that would
// otherwise hang (limits are generous: a loaded 2-core machine is slow, not wrong).
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace wheel_test {

// Calls `done` every `every` until it returns true or `limit` passes; returns its last answer
// (asked once more at the limit).
inline bool wait_until(const std::function<bool()>& done,
                       std::chrono::milliseconds limit = std::chrono::seconds(20),
                       std::chrono::milliseconds every = std::chrono::milliseconds(1)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return done();
    std::this_thread::sleep_for(every);
  }
  return true;
}

}  // namespace wheel_test
