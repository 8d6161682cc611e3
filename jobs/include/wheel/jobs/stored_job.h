// SPDX-License-Identifier: Apache-2.0
// A job as the log stores it: what survives a restart. A reserved job is stored as it was
// before it was reserved (reservations are not durable: after a restart it is ready again).
#pragma once

#include <cstdint>
#include <string>

namespace wheel::jobs {

enum class StoredState : std::uint8_t { kReady = 0, kDelayed = 1, kBuried = 2 };

struct StoredJob {
  std::uint64_t id = 0;
  StoredState state = StoredState::kReady;
  std::uint32_t priority = 0;
  std::int64_t due_unix_ms = 0;  // when a delayed job becomes ready (wall clock, ms); else 0
  std::uint64_t ttr_ms = 0;
  std::int64_t created_unix_ms = 0;
  std::string tube;  // at most 255 bytes (the queue allows 200)
  std::string body;  // at most 1 GiB

  friend bool operator==(const StoredJob&, const StoredJob&) = default;
};

// A change of a live job's state that keeps its tube and body: release (new priority and
// delay), bury, kick, kick-job.
struct StoredChange {
  std::uint64_t id = 0;
  StoredState state = StoredState::kReady;
  std::uint32_t priority = 0;
  std::int64_t due_unix_ms = 0;
};

}  // namespace wheel::jobs
