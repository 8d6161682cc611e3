// SPDX-License-Identifier: Apache-2.0
// IdleWatch: the idle-detection state of one watched object (a connection), embedded in it, and
// the value types of idle detection: IdleKind, IdleTimes, IdleEvent. See idle_detector.h.
//
// Reporting activity is a store of the loop time and a flag: it never touches the timer (the
// detector re-checks the stored times when a timeout fires, as Netty's IdleStateHandler does).
// Everything here is loop thread only.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>

#include "wheel/loop_wheel.h"

namespace wheel::net {

// Netty's IdleState: nothing read, nothing written, or neither.
enum class IdleKind : std::uint8_t { kReader = 0, kWriter = 1, kAll = 2 };

// "reader", "writer" or "all".
const char* to_string(IdleKind kind);

// The three idle times of a watch; 0 disables a kind. Each at most kMaxIdleTime.
struct IdleTimes {
  std::chrono::milliseconds reader{0};
  std::chrono::milliseconds writer{0};
  std::chrono::milliseconds all{0};
};

// The longest idle time: 2^32 - 1 ms (about 49.7 days), so a watch stores each in 4 bytes.
inline constexpr std::chrono::milliseconds kMaxIdleTime{0xffff'ffffLL};

// What on_idle() receives: the kind, and whether this is the first event of that kind since
// the last activity (Netty's IdleStateEvent.isFirst()).
struct IdleEvent {
  IdleKind kind;
  bool first;
};

class IdleWatch {
 public:
  IdleWatch() = default;
  IdleWatch(const IdleWatch&) = delete;
  IdleWatch& operator=(const IdleWatch&) = delete;
  // REQUIRES: not watched (IdleDetector::unwatch() was called, or watch() never was).
  ~IdleWatch() = default;

  // Something was read at loop time `now_ms` (uv_now). O(1), no timer operation.
  void record_read(std::uint64_t now_ms) noexcept {
    last_read_ms_ = now_ms;
    flags_ |= kFirstReader | kFirstAll;
  }
  // Something was written (handed to the socket) at `now_ms`. O(1), no timer operation.
  void record_write(std::uint64_t now_ms) noexcept {
    last_write_ms_ = now_ms;
    flags_ |= kFirstWriter | kFirstAll;
  }
  // Output queued earlier reached the kernel at `now_ms` (a slow reader is draining it). Counts
  // as a write only when the detector observes output (netty#8912). O(1), no timer operation.
  void record_output_progress(std::uint64_t now_ms) noexcept {
    if ((flags_ & kObserveOutput) != 0) record_write(now_ms);
  }

  std::uint64_t last_read_ms() const noexcept { return last_read_ms_; }
  std::uint64_t last_write_ms() const noexcept { return last_write_ms_; }
  bool watched() const noexcept { return (flags_ & kWatched) != 0; }

 private:
  friend class IdleDetector;
  enum Flag : std::uint8_t {
    kFirstReader = 1,
    kFirstWriter = 2,
    kFirstAll = 4,
    kObserveOutput = 8,
    kWatched = 16,
  };

  std::array<LoopWheel::Handle, 3> timeouts_;  // the live timeout per kind, if any
  std::uint64_t last_read_ms_ = 0;
  std::uint64_t last_write_ms_ = 0;
  std::array<std::uint32_t, 3> delay_ms_{};  // per kind; 0: disabled
  std::uint8_t flags_ = 0;
};

}  // namespace wheel::net
