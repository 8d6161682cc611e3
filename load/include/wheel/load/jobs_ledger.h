// SPDX-License-Identifier: Apache-2.0
// The ledger of a drain of delayed jobs: the ids a server acknowledged, checked against the jobs
// reserved afterwards. An acknowledged job never reserved is lost; a job reserved before its
// due time is early; each one's lateness is its reserve's arrival minus its due time. The due
// time comes from the body (make_job_body: the put's send time and its delay), so it is an
// upper bound of the server's: the put reached the server after it was sent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "wheel/load/percentiles.h"

namespace wheel::load {

// How far before its due time a reserve still counts as on time: the server's clocks count
// whole milliseconds, and a job's due time is truncated to one at its put and again when a
// restart re-arms it (docs/jobs.md).
inline constexpr double kJobsEarlySlackMs = 2;

// A value type; not shared between threads.
class JobsLedger {
 public:
  // Records ids the server acknowledged (INSERTED). An id given twice counts once.
  void acknowledge(const std::vector<std::uint64_t>& ids);

  // Records job `id` with `body` reserved at `now_unix_us` (system clock, microseconds): its
  // lateness when the body has make_job_body's header, early when it came more than
  // kJobsEarlySlackMs before its due time, a duplicate when reserved before, unacknowledged
  // when never acknowledged (a put in flight when the server died may still have been logged).
  // Returns complete().
  bool reserve(std::uint64_t id, std::string_view body, std::int64_t now_unix_us);

  // Every acknowledged job has been reserved.
  bool complete() const { return outstanding_.empty(); }

  std::uint64_t acknowledged() const { return acknowledged_; }
  // Acknowledged jobs reserved (once each).
  std::uint64_t reserved() const { return acknowledged_ - outstanding_.size(); }
  // Acknowledged jobs not (yet) reserved: lost, once the drain has waited long enough.
  std::uint64_t lost() const { return outstanding_.size(); }
  std::uint64_t early() const { return early_; }
  std::uint64_t duplicates() const { return duplicates_; }
  std::uint64_t unacknowledged() const { return unacknowledged_; }
  // Reserved jobs whose body has no header (put by someone else): neither timed nor judged.
  std::uint64_t without_header() const { return without_header_; }

  // Up to `limit` of the lost ids, smallest first.
  std::vector<std::uint64_t> lost_ids(std::size_t limit) const;
  // The first early ids, in the order reserved (at most 10 kept).
  const std::vector<std::uint64_t>& early_ids() const { return early_ids_; }
  // Lateness in milliseconds of every reserved job with a header; nullopt when none.
  std::optional<PercentileSummary> lateness_ms() const { return summarize(lateness_ms_); }

 private:
  std::unordered_set<std::uint64_t> outstanding_;  // acknowledged, not yet reserved
  std::unordered_set<std::uint64_t> seen_;         // reserved at least once
  std::uint64_t acknowledged_ = 0;
  std::uint64_t early_ = 0;
  std::uint64_t duplicates_ = 0;
  std::uint64_t unacknowledged_ = 0;
  std::uint64_t without_header_ = 0;
  std::vector<std::uint64_t> early_ids_;
  std::vector<double> lateness_ms_;
};

}  // namespace wheel::load
