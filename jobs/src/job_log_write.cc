// SPDX-License-Identifier: Apache-2.0
// JobLog's write path: records are framed (a put encoded in place), gathered in memory and
// written to the head once per batch (write_out(): before every sync, rotation and reply), in
// disk space set aside beforehand, so that a full disk still refuses the change that does not
// fit when it is appended, as a write of its own would. Without such space (the file cannot set
// it aside) or for a large record, a record is written as it comes.
#include <algorithm>

#include "job_log_impl.h"
#include "record_codec.h"
#include "wheel/jobs/job_log.h"

namespace wheel::jobs {
namespace {

bool is_no_space(std::error_code ec) {
  return ec == std::errc::no_space_on_device;
}

}  // namespace

std::error_code JobLog::Impl::rotate() {
  // The old head is synced in full first, for the same reason as in start_segment().
  if (auto ec = write_out()) return ec;
  if (auto ec = head->sync()) return ec;
  const std::uint64_t old = segments.back().number;
  const std::uint64_t old_bytes = segments.back().bytes;
  const bool set_aside = reserved_end > old_bytes;
  if (auto ec = start_segment(old + 1)) return ec;
  // Give back the space set aside past the old head's end (truncating to its own size drops
  // it); its bytes are synced, so this only frees blocks.
  if (set_aside) fs->truncate(segment_path(old), old_bytes);
  return {};
}

std::error_code JobLog::Impl::write_out() {
  if (pending.empty()) return {};
  if (failed) return LogError::kFailed;
  const SegmentInfo& seg = segments.back();
  // The space was set aside (reserve_space), so a full disk cannot refuse these bytes; any
  // error here is an I/O error, and the changes behind them were never acknowledged.
  if (auto ec = head->append(std::as_bytes(std::span(pending.data(), pending.size())))) {
    note_failure("write", ec);
    return LogError::kFailed;
  }
  syncer->note_written(head, pending_lsn, seg.number, seg.bytes, pending.size());
  pending.clear();
  if (pending.capacity() > 4 * kMaxPending) pending.shrink_to_fit();
  return {};
}

std::error_code JobLog::Impl::reserve_space(std::uint64_t end, bool may_use_reserve) {
  // Ahead in steps, so one fallocate covers many batches, but never far past the segment's end;
  // near a full disk, just what this record needs. On a full disk always: the space free there
  // is what compaction rewrites into (job_log_space.cc), not the head's to hold.
  const std::uint64_t step = std::max<std::uint64_t>(kReserveStep, end - reserved_end);
  const std::uint64_t ahead =
      disk_full ? end : std::max(end, std::min(reserved_end + step, opt.segment_bytes));
  std::uint64_t target = ahead;
  std::error_code ec = head->reserve(reserved_end, target - reserved_end);
  if (ec && is_no_space(ec) && ahead > end) {
    target = end;
    ec = head->reserve(reserved_end, target - reserved_end);
  }
  if (ec && is_no_space(ec)) {
    enter_disk_full();
    if (!may_use_reserve) return LogError::kDiskFull;
    ec = head->reserve(reserved_end, target - reserved_end);  // the reserve was just given back
    if (ec && is_no_space(ec)) return LogError::kDiskFull;
  }
  if (ec == std::errc::operation_not_supported) {
    batch_writes = false;
    return {};
  }
  if (ec) {
    note_failure("setting space aside", ec);
    return LogError::kFailed;
  }
  reserved_end = target;
  return {};
}

std::error_code JobLog::Impl::append(log::RecordType type, std::string_view payload,
                                     bool may_use_reserve, JobLog::Lsn* lsn, std::uint64_t* segment,
                                     std::uint64_t* offset) {
  framed.clear();
  log::append_record(&framed, type, payload);
  return append_framed(type, may_use_reserve, lsn, segment, offset);
}

std::error_code JobLog::Impl::append_put(const StoredJob& job, JobLog::Lsn* lsn,
                                         std::uint64_t* segment, std::uint64_t* offset) {
  // Encoded in place: no copy of the payload between the codec and the framing.
  framed.clear();
  const std::size_t start = log::begin_record(&framed, log::RecordType::kPut);
  codec::append_put(&framed, job);
  log::finish_record(&framed, start);
  return append_framed(log::RecordType::kPut, false, lsn, segment, offset);
}

std::error_code JobLog::Impl::append_framed(log::RecordType type, bool may_use_reserve,
                                            JobLog::Lsn* lsn, std::uint64_t* segment,
                                            std::uint64_t* offset) {
  if (failed) return LogError::kFailed;
  if (disk_full && !may_use_reserve) return LogError::kDiskFull;
  const std::string& rec = framed;
  if (segments.back().bytes + rec.size() > opt.segment_bytes && segments.back().bytes > 64) {
    if (auto ec = rotate()) {
      if (is_no_space(ec)) {
        enter_disk_full();
        return LogError::kDiskFull;
      }
      note_failure("starting a segment", ec);
      return LogError::kFailed;
    }
  }
  SegmentInfo& seg = segments.back();
  // Records are gathered and written once per batch (write_out(), before any sync and before
  // replies leave), in space set aside beforehand so that a full disk still refuses the change
  // that does not fit, here, as a direct write does. Large records go straight to the file.
  bool gathered = false;
  if (batch_writes && rec.size() <= kMaxPending) {
    if (seg.bytes + rec.size() > reserved_end) {
      if (auto ec = reserve_space(seg.bytes + rec.size(), may_use_reserve)) return ec;
    }
    gathered = batch_writes;
  }
  if (gathered) {
    pending.append(rec);
  } else {
    if (auto ec = write_out()) return ec;
    if (auto ec = write_direct(rec, may_use_reserve)) return ec;
  }
  *segment = seg.number;
  *offset = seg.bytes;
  seg.bytes += rec.size();
  total_bytes += rec.size();
  if (type != log::RecordType::kSynced) ++last_lsn;
  *lsn = last_lsn;
  if (gathered) {
    pending_lsn = last_lsn;
    if (pending.size() >= kMaxPending) return write_out();
  } else {
    syncer->note_written(head, last_lsn, seg.number, seg.bytes, rec.size());
  }
  return {};
}

std::error_code JobLog::Impl::write_direct(const std::string& rec, bool may_use_reserve) {
  const SegmentInfo& seg = segments.back();
  const auto bytes = std::as_bytes(std::span(rec.data(), rec.size()));
  std::error_code ec = head->append(bytes);
  if (ec && is_no_space(ec)) {
    // Cut off whatever part of the record made it, so the next record follows a whole one.
    if (auto tec = fs->truncate(segment_path(seg.number), seg.bytes)) {
      note_failure("cutting back a partial write", tec);
      return LogError::kFailed;
    }
    enter_disk_full();
    if (!may_use_reserve) return LogError::kDiskFull;
    ec = head->append(bytes);  // the reserve was just given back
    if (ec && is_no_space(ec)) {
      if (auto tec = fs->truncate(segment_path(seg.number), seg.bytes)) {
        note_failure("cutting back a partial write", tec);
        return LogError::kFailed;
      }
      return LogError::kDiskFull;
    }
  }
  if (ec) {
    note_failure("write", ec);
    return LogError::kFailed;
  }
  return {};
}

}  // namespace wheel::jobs
