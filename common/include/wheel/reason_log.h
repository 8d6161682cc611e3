// SPDX-License-Identifier: Apache-2.0
// ReasonLog: why requests failed, counted by cause and told in the log at a bounded rate, so that
// a storm of one failure (every put refused by a read-only replica) says why without flooding
// the log. The rule, per cause: its first occurrence is logged at once, with its message; later
// ones are only counted until `interval` has passed since the cause's last line; the first one
// after that is logged with how many came since that line (itself included) and its own message.
// So a cause makes at most one line per interval, and one that recurs after a quiet spell is
// logged at once again. A storm that stops leaves its last count to the metrics (count()).
//
// Threads: one thread (its owner's loop).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace wheel {

// The default interval between two lines about one cause.
inline constexpr std::chrono::milliseconds kReasonLogInterval{10'000};

class ReasonLog {
 public:
  // `prefix` starts every line ("wheel-jobs: redis"); `names` names each cause (a line says
  // "[name]"); the views must outlive the log (string literals). REQUIRES: interval > 0.
  ReasonLog(std::string prefix, std::span<const std::string_view> names,
            std::chrono::milliseconds interval = kReasonLogInterval);

  // Counts one failure of `cause` (< causes()) with `message` at `now_ms` (any monotonic
  // millisecond clock) and logs it at warn level by the rule above. Returns whether it logged.
  bool note(std::size_t cause, std::string_view message, std::int64_t now_ms);

  // Counts one failure of `cause` without a line (another log has told it).
  void count_only(std::size_t cause) { ++causes_.at(cause).count; }

  std::uint64_t count(std::size_t cause) const { return causes_[cause].count; }
  std::size_t causes() const { return causes_.size(); }
  std::string_view name(std::size_t cause) const { return names_[cause]; }

 private:
  struct Cause {
    std::uint64_t count = 0;     // ever
    std::uint64_t unlogged = 0;  // since its last line
    std::int64_t last_line = 0;  // now_ms of its last line
    bool logged = false;         // it had a line
  };
  std::string prefix_;
  std::span<const std::string_view> names_;
  std::chrono::milliseconds interval_;
  std::vector<Cause> causes_;
};

}  // namespace wheel
