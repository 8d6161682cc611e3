// SPDX-License-Identifier: Apache-2.0
// JobLog's write path: records are framed (a put encoded in place), gathered in memory and
// written to the head once per batch (write_out(): before every sync, rotation and reply; with
// a log thread, handed to it, so the owner never waits in write()), in
// disk space set aside beforehand, so that a full disk still refuses the change that does not
// fit when it is appended, as a write of its own would. Without such space (the file cannot set
// it aside) or for a large record, a record is written as it comes.
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>

#include "job_log_impl.h"
#include "record_codec.h"
#include "wheel/jobs/log/job_log.h"
#include "wheel/logger.h"

namespace wheel::jobs {
namespace {

bool is_no_space(std::error_code ec) {
  return ec == std::errc::no_space_on_device;
}

bool is_out_of_descriptors(std::error_code ec) {
  return ec == std::errc::too_many_files_open || ec == std::errc::too_many_files_open_in_system;
}

}  // namespace

SpareDescriptor::SpareDescriptor() {
  take();
}

SpareDescriptor::~SpareDescriptor() {
  release();
}

bool SpareDescriptor::release() {
  bool any = false;
  for (int& fd : fds_) {
    if (fd >= 0) {
      ::close(fd);
      fd = -1;
      any = true;
    }
  }
  return any;
}

void SpareDescriptor::take() {
  for (int& fd : fds_) {
    if (fd < 0) fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  }
}

std::error_code JobLog::Impl::rotate_for_append() {
  if (short_of_descriptors && now_ms < descriptor_retry_ms) {
    ++refused_for_descriptors;
    return LogError::kNoDescriptors;
  }
  std::error_code ec = rotate();
  if (!ec) {
    if (short_of_descriptors) {
      short_of_descriptors = false;
      logger()->info("job log in {}: a descriptor is free again; accepting changes ({} refused)",
                     opt.dir, refused_for_descriptors);
    }
    return {};
  }
  if (is_no_space(ec)) {
    enter_disk_full();
    return LogError::kDiskFull;
  }
  if (!is_out_of_descriptors(ec)) {
    note_failure("starting a segment", ec);
    return LogError::kFailed;
  }
  // Temporary: the clients holding descriptors leave, and the next retry gets one.
  ++refused_for_descriptors;
  descriptor_backoff_ms =
      short_of_descriptors ? std::min<std::uint64_t>(descriptor_backoff_ms * 2, 1000) : 10;
  descriptor_retry_ms = now_ms + descriptor_backoff_ms;
  if (!short_of_descriptors || now_ms >= descriptor_logged_ms + 10'000) {
    logger()->warn(
        "job log in {}: starting segment {} failed ({}); refusing changes until a descriptor "
        "is free ({} refused so far), retrying",
        opt.dir, segments.back().number + 1, ec.message(), refused_for_descriptors);
    descriptor_logged_ms = now_ms;
  }
  short_of_descriptors = true;
  return LogError::kNoDescriptors;
}

std::error_code JobLog::Impl::rotate() {
  // The old head is synced in full first, for the same reason as in start_segment().
  if (auto ec = write_out()) return ec;
  own_head();
  if (auto ec = syncer->failure()) return ec;  // a write on the log thread failed
  if (auto ec = head->sync()) return ec;
  const std::uint64_t old = segments.back().number;
  const std::uint64_t old_bytes = segments.back().bytes;
  const bool set_aside = reserved_end > old_bytes;
  std::error_code ec = start_segment(old + 1);
  if (is_out_of_descriptors(ec) && spare.release()) {
    // The spare descriptor makes room for the new segment's; taken back at once.
    ec = start_segment(old + 1);
    spare.take();
  }
  if (ec) return ec;
  ahead_end = 0;
  ahead_failed = false;
  if (syncer->threaded()) reserve_ahead();  // the new head's first step, off the owner's thread
  // Give back the space set aside past the old head's end (truncating to its own size drops
  // it); its bytes are synced, so this only frees blocks.
  if (set_aside) fs->truncate(segment_path(old), old_bytes);
  return {};
}

std::error_code JobLog::Impl::write_out() {
  if (pending.empty()) return {};
  if (failed) return LogError::kFailed;
  const SegmentInfo& seg = segments.back();
  note_appended(pending_lsn);
  if (syncer->threaded()) {
    // The log thread writes it; the owner keeps a reference for read_body() until written.
    auto bytes = std::make_shared<const std::string>(std::move(pending));
    pending = std::string();
    handed_off.push_back({seg.number, seg.bytes - bytes->size(), bytes});
    syncer->hand_off(head, std::move(bytes), pending_lsn, seg.number, seg.bytes);
    reserve_ahead();
    return {};
  }
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

void JobLog::Impl::note_appended(Lsn lsn) {
  const std::chrono::nanoseconds now = syncer->now();
  // Batches within a millisecond share an entry (the older time): at most 1,000 a second.
  if (!appended_at.empty() && now - appended_at.back().second < std::chrono::milliseconds(1)) {
    appended_at.back().first = lsn;
  } else {
    appended_at.emplace_back(lsn, now);
  }
}

void JobLog::Impl::own_head() {
  if (!syncer->threaded()) return;
  syncer->wait_idle();
  prune_handed_off();
  reserved_end = std::max(reserved_end, ahead_end.load());
}

void JobLog::Impl::reserve_ahead() {
  if (!batch_writes || disk_full || failed || ahead_busy.load() || ahead_failed.load()) return;
  const std::uint64_t bytes = segments.back().bytes;
  const std::uint64_t from = std::max(reserved_end, ahead_end.load());
  if (from >= opt.segment_bytes || from > bytes + kReserveStep / 2) return;
  const std::uint64_t to = std::min(std::max(from, bytes) + kReserveStep, opt.segment_bytes);
  ahead_busy = true;
  syncer->run_task([this, file = head, from, to] {
    // Any error (a full disk too) leaves it to the owner, who sets space aside with the
    // disk-full rules when a record does not fit.
    if (file->reserve(from, to - from)) {
      ahead_failed = true;
    } else {
      ahead_end = to;
    }
    ahead_busy = false;
  });
}

bool JobLog::Impl::next_change_needs_disk() const {
  const SegmentInfo& seg = segments.back();
  if (seg.bytes + kMaxPending > opt.segment_bytes) return true;  // a rotation is near
  if (!batch_writes || disk_full) return true;                   // each record written at once
  if (std::max(reserved_end, ahead_end.load()) < seg.bytes + kMaxPending) return true;
  // The id lease runs out: allocate_id() would write and sync the lease file.
  return next_id + 64 >= id_limit;
}

void JobLog::Impl::prune_handed_off() {
  std::uint64_t segment = 0;
  std::uint64_t end = 0;
  syncer->written_position(&segment, &end);
  while (!handed_off.empty()) {
    const HandedOff& h = handed_off.front();
    if (h.segment > segment || (h.segment == segment && h.offset + h.bytes->size() > end)) break;
    handed_off.pop_front();
  }
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

std::error_code JobLog::Impl::append_put(const PutRecord& job, JobLog::Lsn* lsn,
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
  reserved_end = std::max(reserved_end, ahead_end.load());
  if (segments.back().bytes + rec.size() > opt.segment_bytes && segments.back().bytes > 64) {
    if (auto ec = rotate_for_append()) return ec;
  }
  SegmentInfo& seg = segments.back();
  // Records are gathered and written once per batch (write_out(), before any sync and before
  // replies leave), in space set aside beforehand so that a full disk still refuses the change
  // that does not fit, here, as a direct write does. Large records go straight to the file.
  // With a log thread every record is gathered (the thread writes them in order), large ones
  // too.
  bool gathered = false;
  if (batch_writes && (rec.size() <= kMaxPending || syncer->threaded())) {
    if (seg.bytes + rec.size() > reserved_end) {
      own_head();
      if (seg.bytes + rec.size() > reserved_end) {
        if (auto ec = reserve_space(seg.bytes + rec.size(), may_use_reserve)) return ec;
        ahead_failed = false;
      }
    }
    gathered = batch_writes;
  }
  if (gathered) {
    pending.append(rec);
  } else {
    if (auto ec = write_out()) return ec;
    own_head();
    if (auto ec = write_direct(rec, may_use_reserve)) return ec;
    note_appended(last_lsn + (type != log::RecordType::kSynced ? 1 : 0));
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

JobLog::Lsn JobLog::written_lsn() const {
  return impl_->syncer->threaded() ? impl_->syncer->written_lsn() : impl_->last_lsn;
}

bool JobLog::changes_wait() const {
  const Impl& d = *impl_;
  if (!d.syncer->threaded() || d.failed) return false;
  if (d.syncer->backlog_bytes() >= kMaxBacklog) return true;
  return !d.syncer->idle() && d.next_change_needs_disk();
}

}  // namespace wheel::jobs
