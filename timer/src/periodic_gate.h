// SPDX-License-Identifier: Apache-2.0
// Internal. The PeriodicGate: how a periodic job on an executor thread reaches its timer, which
// may have stopped or be gone by the time the job comes back.
#pragma once

#include <cstdint>
#include <mutex>

namespace wheel {
class Timeout;
}  // namespace wheel

namespace wheel::detail {

class TimerCore;

// Lets a periodic job on an executor thread re-arm its timeout while the timer runs, and
// retire it once the timer has stopped or is gone. Shared by the timer and its periodic nodes.
// Periodic executor path only.
struct PeriodicGate {
  // A periodic job back from the executor (ran: whether its run happened): true if its timer
  // (alive and not stopped) re-armed the timeout; false if it ends, and the caller retires it.
  // Safe from any thread. Defined in periodic_timeouts.cc.
  bool take_back(Timeout* node, bool ran);

  std::mutex mutex;
  TimerCore* core = nullptr;  // null once stop() has collected (guarded by mutex)
  std::int64_t out = 0;       // periodic jobs handed to the executor, not back yet (mutex)
};

}  // namespace wheel::detail
