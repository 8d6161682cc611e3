// SPDX-License-Identifier: Apache-2.0
// The log's index: where each live job's put record is and its state now, from the log's own
// map (recovery fills it; a log used alone keeps it) or from the owner's lent LogIndex
// (log_index.h), and the LogPositions that name places across segments.
#include <algorithm>
#include <unordered_map>

#include "job_log_impl.h"
#include "record_codec.h"
#include "wheel/jobs/log/job_log.h"

namespace wheel::jobs {

bool JobLog::Impl::locate(std::uint64_t id, PutAt* at, LogIndex::Entry* entry) const {
  LogIndex::Entry e;
  if (!index_lent) {
    auto it = index.find(id);
    if (it == index.end()) return false;
    e = it->second;
  } else if (lent == nullptr || !lent->find(id, &e)) {
    return false;
  }
  if (!put_at(id, e.put, at)) return false;
  if (entry != nullptr) *entry = e;
  return true;
}

bool JobLog::Impl::put_at(std::uint64_t id, const PutPlace& put, PutAt* at) const {
  if (!segment_at(put.position, &at->segment, &at->offset)) return false;
  at->put_size = put_size(id, put);
  return true;
}

std::uint64_t JobLog::Impl::put_size(std::uint64_t id, const PutPlace& put) const {
  // The counters a changed job's put carries (or will, once rewritten) are in its share.
  return codec::put_record_size(put.tube_size, put.body_size, counters.contains(id));
}

void JobLog::Impl::relocate(std::uint64_t id, std::uint64_t segment, std::uint64_t offset) {
  if (index_lent) {
    if (lent != nullptr) lent->placed(id, position_of(segment, offset));
    return;
  }
  auto it = index.find(id);
  if (it != index.end()) it->second.put.position = position_of(segment, offset);
}

LogPosition JobLog::Impl::position_of(std::uint64_t number, std::uint64_t offset) const {
  auto it = std::lower_bound(segments.begin(), segments.end(), number,
                             [](const SegmentInfo& s, std::uint64_t n) { return s.number < n; });
  return it->base + offset;
}

bool JobLog::Impl::segment_at(LogPosition position, std::uint64_t* number,
                              std::uint64_t* offset) const {
  // The last segment whose base is at or before `position`.
  auto it = std::upper_bound(segments.begin(), segments.end(), position,
                             [](LogPosition p, const SegmentInfo& s) { return p < s.base; });
  if (it == segments.begin()) return false;
  --it;
  if (position - it->base >= it->bytes) return false;
  *number = it->number;
  *offset = position - it->base;
  return true;
}

void JobLog::lend_index(LogIndex* index) {
  Impl& d = *impl_;
  d.index_lent = true;
  d.lent = index;
  // Frees its nodes, unless take_recovered_jobs() still needs them (it frees them then).
  if (d.recovered_segments.empty()) {
    std::unordered_map<std::uint64_t, LogIndex::Entry>().swap(d.index);
  }
}

}  // namespace wheel::jobs
