// SPDX-License-Identifier: Apache-2.0
// Internal to wheel::jobs. DeadlineQueue: the JobQueue's timeouts (delay ends, TTR expiries,
// reserve timeouts, pause ends), exact to the millisecond, popped in time order and, among
// equal times, in the order added. The one place to swap in wheel::LoopWheel: the queue uses
// only add/cancel/next_due/pop_due.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <unordered_map>
#include <utility>

namespace wheel::jobs {

enum class DeadlineKind : std::uint8_t { kJob, kWait, kPause };
struct DeadlineTarget {
  DeadlineKind kind;
  std::uint64_t key;  // job id, session id, or the tube's address
};

class DeadlineQueue {
 public:
  using Millis = std::chrono::milliseconds;

  // Adds a deadline; returns its token (never 0).
  std::uint64_t add(Millis when, DeadlineTarget target) {
    std::uint64_t token = next_token_++;
    by_time_.emplace(std::pair{when, token}, target);
    when_.emplace(token, when);
    return token;
  }
  // Cancels `token` if pending and sets it to 0; 0 is ignored.
  void cancel(std::uint64_t& token) {
    if (token == 0) return;
    auto it = when_.find(token);
    if (it != when_.end()) {
      by_time_.erase(std::pair{it->second, token});
      when_.erase(it);
    }
    token = 0;
  }
  std::optional<Millis> next_due() const {
    if (by_time_.empty()) return std::nullopt;
    return by_time_.begin()->first.first;
  }
  // Removes and returns the earliest deadline due at or before `now`.
  std::optional<DeadlineTarget> pop_due(Millis now) {
    if (by_time_.empty() || by_time_.begin()->first.first > now) return std::nullopt;
    auto first = by_time_.begin();
    DeadlineTarget target = first->second;
    when_.erase(first->first.second);
    by_time_.erase(first);
    return target;
  }
  std::size_t size() const { return when_.size(); }

 private:
  std::map<std::pair<Millis, std::uint64_t>, DeadlineTarget> by_time_;
  std::unordered_map<std::uint64_t, Millis> when_;
  std::uint64_t next_token_ = 1;
};

}  // namespace wheel::jobs
