// SPDX-License-Identifier: Apache-2.0
// Compaction: the oldest segment's live put records are rewritten, with each job's current
// state, at the head; once they are durable the old segment is removed. One segment per step,
// on the owner thread, so the pause is bounded by one segment's read and rewrite.
//
// Why this keeps the log bounded (beanstalkd's binlog does not: a segment there stays while any
// of its jobs lives, so one long-lived job pins every segment after it): no record ever needs
// to stay in an old segment. Updates and deletes of a job are only needed while its put is
// older than them; the rewritten put carries the job's state, so everything in the old segment
// is either rewritten or dead once its put records are copied.
#include <spdlog/spdlog.h>

#include "job_log_impl.h"
#include "log_reader.h"
#include "record_codec.h"
#include "wheel/jobs/log/job_log.h"
#include "wheel/logger.h"

namespace wheel::jobs {

bool JobLog::Impl::over_bound(bool hard) const {
  // Soft: start work early (1.5x) so that the hard bound (2x live + 2 segments) normally
  // holds with one step per poll; hard: keep going until it holds.
  const std::uint64_t live = hard ? 2 * live_bytes : live_bytes + live_bytes / 2;
  return total_bytes > live + 2 * opt.segment_bytes;
}

void JobLog::Impl::restate(std::uint64_t id, const LogIndex::Entry& entry, StoredJob* job) const {
  // Changed since its put: its state now and the counters of its last change. Else the
  // put's own still hold: a lent index answers the queue's state (a delayed job that became
  // ready, its due time read back through the queue's clock), which is no change a restart
  // needs, and would cost the record its counters.
  if (!index_lent || changed_since_put(id)) {
    job->state = entry.state;
    job->priority = entry.priority;
    job->due_unix_ms = entry.due_unix_ms;
  }
  if (auto c = counters.find(id); c != counters.end()) job->counters = c->second;
}

void JobLog::Impl::note_rewritten(std::uint64_t id, bool needs_counters) {
  // Counters the new put need not carry (a new job's): the map then holds none, so that
  // locate() counts the record's size as it is.
  if (!needs_counters) counters.erase(id);
  changed_by_v1.erase(id);  // the new put says its state
}

void JobLog::Impl::compact(std::uint64_t max_steps) {
  // No index lent now: every job would look dead. A full disk has its own steps
  // (compact_full(): rewrites need space, which this one would take from the deletes).
  if (failed || compaction_stopped || disk_full || (index_lent && lent == nullptr)) return;
  // Only segments older than the head at entry are compacted: rewrites land in newer ones.
  std::uint64_t stop_at = segments.back().number;
  bool rotated = false;
  std::uint64_t steps = 0;
  while (over_bound(steps >= max_steps)) {
    if (segments.front().number >= stop_at) {
      // Everything old is gone and the head alone is over: start a new head so it can go too.
      if (rotated || !over_bound(true)) return;
      if (auto ec = rotate()) {
        if (ec == std::errc::no_space_on_device) enter_disk_full();
        return;
      }
      rotated = true;
      stop_at = segments.back().number;
    }
    if (!compact_oldest()) return;
    ++steps;
  }
}

bool JobLog::Impl::compact_oldest() {
  const SegmentInfo old = segments.front();
  const std::string path = segment_path(old.number);
  std::string data;
  if (auto ec = fs->read_range(path, 0, old.bytes, &data); ec || data.size() != old.bytes) {
    logger()->error("job log: cannot read {} for compaction ({}); compaction stopped", path,
                    ec ? ec.message() : "short read");
    compaction_stopped = true;
    return false;
  }
  log::Reader reader(data);
  log::Record rec;
  std::uint64_t rewritten = 0;
  for (;;) {
    const auto status = reader.next(&rec);
    if (status == log::Reader::Status::kEnd) break;
    if (status == log::Reader::Status::kCorrupt) {
      logger()->error(
          "job log: corrupt record in {} at byte offset {} ({}) during compaction; "
          "compaction stopped",
          path, reader.corrupt_offset(), reader.reason());
      compaction_stopped = true;
      return false;
    }
    if (static_cast<log::RecordType>(rec.type) != log::RecordType::kPut) continue;
    std::uint64_t id = 0;
    if (!codec::peek_put_id(rec.payload, &id)) continue;
    PutAt at;
    LogIndex::Entry entry;
    if (!locate(id, &at, &entry) || at.segment != old.number || at.offset != rec.offset) {
      continue;  // dead, or rewritten since
    }
    if (disk_full) return false;  // keep the reserve for deletes; pure drops still happen
    StoredJob job;
    if (!codec::decode_put(rec.payload, &job)) continue;
    restate(id, entry, &job);
    JobLog::Lsn lsn = 0;
    std::uint64_t seg = 0;
    std::uint64_t off = 0;
    if (append_put(job, &lsn, &seg, &off)) {
      return false;  // disk full or failed: the old segment stays, nothing is lost
    }
    const std::uint64_t size = codec::put_record_size(job);
    live_bytes = live_bytes - at.put_size + size;
    segments.back().live += size;
    note_rewritten(id, codec::put_needs_counters(job));
    relocate(id, seg, off);
    rewritten += rec.size();
  }
  // The copies must be on disk before the originals go.
  if (rewritten > 0) {
    if (sync_inline()) return false;
  }
  if (auto ec = fs->remove(path)) {
    logger()->error("job log: cannot remove {} ({}); compaction stopped", path, ec.message());
    compaction_stopped = true;
    return false;
  }
  fs->sync_dir(opt.dir);
  readers.erase(old.number);  // frees the removed file's space
  segments.pop_front();
  total_bytes -= old.bytes;
  ++compacted_segments;
  rewritten_bytes += rewritten;
  logger()->debug("job log: compacted {}: {} of {} bytes live, rewritten", path, rewritten,
                  old.bytes);
  return true;
}

}  // namespace wheel::jobs
