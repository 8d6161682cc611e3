// SPDX-License-Identifier: Apache-2.0
#include "wheel/load/jobs_ledger.h"

#include <algorithm>

#include "wheel/load/jobs_load.h"

namespace wheel::load {

namespace {
constexpr std::size_t kEarlyIdsKept = 10;
}  // namespace

void JobsLedger::acknowledge(const std::vector<std::uint64_t>& ids) {
  for (const std::uint64_t id : ids) {
    if (seen_.contains(id) || !outstanding_.insert(id).second) continue;
    ++acknowledged_;
  }
}

bool JobsLedger::reserve(std::uint64_t id, std::string_view body, std::int64_t now_unix_us) {
  if (outstanding_.erase(id) == 0) {
    if (seen_.contains(id)) {
      ++duplicates_;
    } else {
      ++unacknowledged_;
    }
  }
  seen_.insert(id);
  std::int64_t sent_us = 0;
  std::uint64_t delay_ms = 0;
  bool probe = false;
  if (!parse_job_body(body, sent_us, delay_ms, probe)) {
    ++without_header_;
    return complete();
  }
  const double late_ms =
      static_cast<double>(now_unix_us - sent_us) / 1000.0 - static_cast<double>(delay_ms);
  lateness_ms_.push_back(late_ms);
  if (late_ms < -kJobsEarlySlackMs) {
    ++early_;
    if (early_ids_.size() < kEarlyIdsKept) early_ids_.push_back(id);
  }
  return complete();
}

std::vector<std::uint64_t> JobsLedger::lost_ids(std::size_t limit) const {
  std::vector<std::uint64_t> ids(outstanding_.begin(), outstanding_.end());
  std::sort(ids.begin(), ids.end());
  if (ids.size() > limit) ids.resize(limit);
  return ids;
}

}  // namespace wheel::load
