// SPDX-License-Identifier: Apache-2.0
// How an idle connection's close by the server is judged against the expected idle timeout.
#pragma once

namespace wheel::load {

// A close more than this many ms before the expected moment is early (the issue's -50 ms): a
// little slack for servers whose timers round to their tick.
inline constexpr double kEarlyMarginMs = 50;

enum class IdleClose { kEarly, kOnTime, kLate };

// Judges a close by its lateness = close time - (connect time + expected idle timeout), in ms,
// where connect time is read just before connect() is called (the server cannot have accepted
// earlier, however long the client is preempted around the call):
// early below -kEarlyMarginMs, late above `tolerance_ms`, else on time.
inline IdleClose classify_idle_close(double lateness_ms, double tolerance_ms) {
  if (lateness_ms < -kEarlyMarginMs) return IdleClose::kEarly;
  if (lateness_ms > tolerance_ms) return IdleClose::kLate;
  return IdleClose::kOnTime;
}

}  // namespace wheel::load
