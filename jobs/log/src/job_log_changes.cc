// SPDX-License-Identifier: Apache-2.0
// JobLog's changes: put, change and remove append their records and keep the live bytes (each
// live job's put record, by segment) and the index (the log's own) up to date.
#include <stdexcept>

#include "job_log_impl.h"
#include "record_codec.h"
#include "wheel/jobs/log/job_log.h"

namespace wheel::jobs {

std::error_code JobLog::put(const StoredJob& job, Lsn* lsn, LogPosition* position) {
  if (job.tube.size() > 255 || job.body.size() > (1u << 30) || job.id >= impl_->next_id) {
    throw std::invalid_argument(
        "JobLog::put: tube over 255 bytes, body over 1 GiB or id not allocated");
  }
  Impl& d = *impl_;
  std::uint64_t seg = 0;
  std::uint64_t off = 0;
  if (auto ec = d.append_put(job, lsn, &seg, &off)) return ec;
  const std::uint64_t size = codec::put_record_size(job);
  const LogPosition at = d.position_of(seg, off);
  if (!d.index_lent) {
    auto [it, inserted] = d.index.try_emplace(job.id);
    PutAt was;
    if (!inserted && d.put_at(job.id, it->second.put, &was)) {  // put again: the old one is dead
      d.live_bytes -= was.put_size;
      if (SegmentInfo* s = d.segment_info(was.segment)) s->live -= was.put_size;
    }
    it->second = {{at, static_cast<std::uint32_t>(job.tube.size()),
                   static_cast<std::uint32_t>(job.body.size())},
                  job.state,
                  job.priority,
                  job.due_unix_ms};
  }
  d.live_bytes += size;
  d.segments.back().live += size;
  if (codec::put_needs_counters(job)) {
    d.counters[job.id] = job.counters;
  } else {
    d.counters.erase(job.id);
  }
  if (position != nullptr) *position = at;
  return {};
}

void JobLog::Impl::set_counters(std::uint64_t id, const StoredCounters& c) {
  auto [it, fresh] = counters.insert_or_assign(id, c);
  if (!fresh) return;
  // The job's next put (compaction) carries them: count them live now (compaction recounts).
  // Its put_size counts them from now on, by this map (put_at()).
  PutAt where;  // segment 0: none
  if (!index_lent) {
    auto entry = index.find(id);
    if (entry == index.end()) return;
    put_at(id, entry->second.put, &where);  // none while recovery replays its segment
  } else {
    locate(id, &where);
  }
  live_bytes += codec::kCountersSize;
  if (SegmentInfo* seg = segment_info(where.segment)) seg->live += codec::kCountersSize;
}

std::error_code JobLog::change(const StoredChange& change, Lsn* lsn) {
  Impl& d = *impl_;
  PutAt at;
  if (!d.locate(change.id, &at)) throw std::invalid_argument("JobLog::change: no such live job");
  std::uint64_t seg = 0;
  std::uint64_t off = 0;
  if (auto ec = d.append(log::RecordType::kUpdate, codec::encode_change(change), false, lsn, &seg,
                         &off)) {
    return ec;
  }
  // A lent index learns the new state from its owner, who applies the change next.
  if (auto it = d.index.find(change.id); it != d.index.end()) {
    it->second.state = change.state;
    it->second.priority = change.priority;
    it->second.due_unix_ms = change.due_unix_ms;
  }
  d.set_counters(change.id, change.counters);
  return {};
}

std::error_code JobLog::remove(std::uint64_t id, Lsn* lsn) {
  Impl& d = *impl_;
  PutAt entry;
  if (!d.locate(id, &entry)) throw std::invalid_argument("JobLog::remove: no such live job");
  std::uint64_t seg = 0;
  std::uint64_t off = 0;
  if (auto ec = d.append(log::RecordType::kDelete, codec::encode_u64(id), true, lsn, &seg, &off)) {
    return ec;
  }
  d.live_bytes -= entry.put_size;
  if (SegmentInfo* seg = d.segment_info(entry.segment)) seg->live -= entry.put_size;
  d.index.erase(id);  // a lent index forgets it when its owner deletes the job, next
  d.counters.erase(id);
  d.changed_by_v1.erase(id);
  return {};
}

}  // namespace wheel::jobs
