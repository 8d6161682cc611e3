// SPDX-License-Identifier: Apache-2.0
// JobLog: group commit and the disk-full state. The changes (put, change, remove) and the live
// bytes they count are in job_log_changes.cc, writing records (gathered, one write per batch)
// in job_log_write.cc, open and replay in job_log_recovery.cc, the directory's lock
// and id lease in job_log_dir.cc, compaction in job_log_compaction.cc, the index (own or lent)
// in job_log_index.cc.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <limits>
#include <random>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "job_log_impl.h"
#include "record_codec.h"
#include "wheel/jobs/log/job_log.h"
#include "wheel/logger.h"

namespace wheel::jobs {

static_assert(std::is_same_v<JobLog::Lsn, JobLogImpl::Lsn>);

namespace {

class LogCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "wheel.jobs.log"; }
  std::string message(int c) const override {
    switch (static_cast<LogError>(c)) {
      case LogError::kDiskFull:
        return "disk full: change refused";
      case LogError::kFailed:
        return "job log failed after an I/O error";
      case LogError::kNoDescriptors:
        return "out of file descriptors: change refused";
    }
    return "unknown job log error";
  }
};

}  // namespace

const std::error_category& log_category() {
  static LogCategory category;
  return category;
}

JobLogImpl::JobLogImpl(const JobLogOptions& options, FileSystem* file_system)
    : opt(options), fs(file_system) {}

std::string JobLog::Impl::segment_path(std::uint64_t number) const {
  char name[32];
  std::snprintf(name, sizeof name, "%020" PRIu64 ".wjl", number);
  return opt.dir + "/" + name;
}

bool JobLog::Impl::parse_segment_name(std::string_view name, std::uint64_t* number) {
  if (name.size() != 24 || name.substr(20) != ".wjl") return false;
  std::uint64_t n = 0;
  for (char c : name.substr(0, 20)) {
    if (c < '0' || c > '9') return false;
    if (n > (std::numeric_limits<std::uint64_t>::max() - 9) / 10) return false;
    n = n * 10 + static_cast<std::uint64_t>(c - '0');
  }
  *number = n;
  return true;
}

void JobLog::Impl::note_failure(const char* what, std::error_code ec) {
  if (!failed) {
    logger()->error("job log in {}: {} failed ({}); no more changes until a restart", opt.dir, what,
                    ec.message());
  }
  failed = true;
}

std::error_code JobLog::Impl::start_segment(std::uint64_t number) {
  std::unique_ptr<WritableFile> file;
  const std::string path = segment_path(number);
  if (auto ec = fs->open_append(path, &file)) return ec;
  std::string rec;
  std::random_device random;
  const std::uint64_t nonce = (std::uint64_t{random()} << 32) ^ random();
  // The id lease file is what counts; the start record repeats its limit (a log of an older
  // version, without the file, read its limits from the segments).
  const std::uint64_t limit = std::max(id_limit, next_id);
  log::append_record(&rec, log::RecordType::kSegmentStart,
                     codec::encode_segment_start({number, limit, nonce}));
  auto ec = file->append(std::as_bytes(std::span(rec.data(), rec.size())));
  // The start record and the directory entry are durable before any record of the segment can
  // be acknowledged: only the last segment can ever end torn.
  if (!ec) ec = file->sync();
  if (!ec) ec = fs->sync_dir(opt.dir);
  if (ec) {
    fs->remove(path);
    return ec;
  }
  head = std::shared_ptr<WritableFile>(std::move(file));
  head_nonce = nonce;
  marked_end = 0;
  reserved_end = 0;
  segments.push_back({number, rec.size(), next_base()});
  total_bytes += rec.size();
  return {};
}

void JobLog::Impl::mark_synced() {
  std::uint64_t segment = 0;
  std::uint64_t end = 0;
  syncer->durable_position(&segment, &end);
  if (failed || disk_full || segment != segments.back().number || end <= marked_end) return;
  // Never rotate for a mark: a segment is synced whole before the next one starts anyway.
  if (segments.back().bytes + log::kHeaderSize + 16 > opt.segment_bytes) return;
  JobLog::Lsn lsn = 0;
  std::uint64_t seg = 0;
  std::uint64_t off = 0;
  if (!append(log::RecordType::kSynced, codec::encode_synced({head_nonce, end}), false, &lsn, &seg,
              &off)) {
    marked_end = end;
  }
}

std::error_code JobLog::Impl::sync_inline() {
  if (auto ec = write_out()) return ec;
  own_head();  // the log thread writes what it was handed first (the owner waits here)
  if (auto ec = syncer->failure()) {
    note_failure("write", ec);
    return LogError::kFailed;
  }
  if (auto ec = syncer->sync_now()) {
    note_failure("fdatasync", ec);
    return LogError::kFailed;
  }
  mark_synced();
  return {};
}

void JobLog::Impl::enter_disk_full() {
  if (disk_full) return;
  disk_full = true;
  next_space_check_ms = 0;
  logger()->warn("job log in {}: disk full; refusing new jobs and changes, deletes still work",
                 opt.dir);
  if (opt.reserve_bytes > 0) fs->remove(opt.dir + "/" + kReserveFile);
}

std::error_code JobLog::Impl::create_reserve() {
  if (opt.reserve_bytes == 0) return {};
  const std::string path = opt.dir + "/" + kReserveFile;
  std::uint64_t size = 0;
  if (!fs->file_size(path, &size) && size >= opt.reserve_bytes) return {};
  fs->remove(path);
  std::unique_ptr<WritableFile> file;
  if (auto ec = fs->open_append(path, &file)) return ec;
  const std::string zeros(64 * 1024, '\0');
  std::error_code ec;
  for (std::uint64_t left = opt.reserve_bytes; left > 0 && !ec;) {
    const std::size_t n = left < zeros.size() ? static_cast<std::size_t>(left) : zeros.size();
    ec = file->append(std::as_bytes(std::span(zeros.data(), n)));
    left -= n;
  }
  if (!ec) ec = file->sync();
  if (ec) fs->remove(path);
  return ec;
}

void JobLog::Impl::check_space(std::uint64_t now_ms) {
  if (!disk_full || failed || now_ms < next_space_check_ms) return;
  next_space_check_ms = now_ms + 1000;
  std::uint64_t free = 0;
  if (fs->free_bytes(opt.dir, &free)) return;
  if (free < opt.reserve_bytes + 64 * 1024) return;
  if (create_reserve()) return;
  disk_full = false;
  logger()->info("job log in {}: space is back; accepting changes again", opt.dir);
}

JobLog::JobLog(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

JobLog::~JobLog() {
  Impl& d = *impl_;
  if (d.failed) return;
  // Marks too (they carry no LSN): the next start then knows how far the head was synced.
  if (d.write_out()) return;
  d.own_head();
  if (d.syncer->failure()) return;
  if (d.syncer->durable_lsn() < d.last_lsn) d.syncer->sync_now();  // no mark after it: nothing
  if (d.reserved_end > d.segments.back().bytes) {                  // would write it out
    d.fs->truncate(d.segment_path(d.segments.back().number), d.segments.back().bytes);
  }
}

std::error_code JobLog::allocate_id(std::uint64_t* id) {
  if (auto ec = impl_->ensure_id_lease()) return ec;
  *id = impl_->next_id++;
  return {};
}

void JobLog::commit() {
  if (impl_->write_out() || impl_->failed || impl_->opt.sync != SyncPolicy::kAlways) return;
  if (impl_->syncer->durable_lsn() >= impl_->last_lsn) return;
  if (impl_->opt.sync_thread) {
    impl_->syncer->request();
  } else {
    impl_->sync_inline();
  }
}

JobLog::Lsn JobLog::durable_lsn() const {
  return impl_->syncer->durable_lsn();
}
JobLog::Lsn JobLog::last_lsn() const {
  return impl_->last_lsn;
}

void JobLog::poll(std::uint64_t now_ms) {
  Impl& d = *impl_;
  if (auto ec = d.syncer->failure()) d.note_failure("write or fdatasync", ec);
  if (d.write_out() || d.failed) return;
  d.prune_handed_off();
  // What is synced (written, under kNever) is no longer counted by the age metrics.
  const Lsn done =
      d.opt.sync == SyncPolicy::kNever ? d.syncer->written_lsn() : d.syncer->durable_lsn();
  while (!d.appended_at.empty() && d.appended_at.front().first <= done) d.appended_at.pop_front();
  d.now_ms = now_ms;
  if (d.opt.sync == SyncPolicy::kInterval) {
    // The first poll syncs too: what was appended before it (the log has no clock of its own)
    // must not wait a whole interval more than what comes after.
    if (!d.interval_started || now_ms >= d.last_interval_sync_ms + d.opt.sync_interval_ms) {
      d.interval_started = true;
      d.last_interval_sync_ms = now_ms;
      if (d.syncer->durable_lsn() < d.last_lsn) {
        if (d.opt.sync_thread) {
          d.syncer->request();
        } else {
          d.sync_inline();
        }
      }
    }
  }
  d.mark_synced();
  // On a full disk a compaction step that gave space back lets check_space() look at once.
  if (d.disk_full && d.compact_full()) d.next_space_check_ms = 0;
  d.check_space(now_ms);
  // A compaction step writes and may rotate: it waits while the log thread is busy.
  if (d.syncer->idle()) d.compact(1);
}

std::uint64_t JobLog::next_poll_ms() const {
  std::uint64_t next = std::numeric_limits<std::uint64_t>::max();
  if (impl_->opt.sync == SyncPolicy::kInterval) {
    next = impl_->interval_started ? impl_->last_interval_sync_ms + impl_->opt.sync_interval_ms : 0;
  }
  if (impl_->disk_full && impl_->next_space_check_ms < next) next = impl_->next_space_check_ms;
  if (impl_->disk_full && impl_->full_progress) next = 0;  // the next step may give more back
  return next;
}

void JobLog::set_wakeup(std::function<void()> wakeup) {
  impl_->syncer->set_wakeup(std::move(wakeup));
}

std::error_code JobLog::sync_now() {
  if (impl_->failed) return LogError::kFailed;
  return impl_->sync_inline();
}

JobLogStats JobLog::stats() const {
  const Impl& d = *impl_;
  JobLogStats s;
  s.live_bytes = d.live_bytes;
  s.total_bytes = d.total_bytes;
  s.dead_bytes = d.total_bytes > d.live_bytes ? d.total_bytes - d.live_bytes : 0;
  s.segments = d.segments.size();
  s.last_lsn = d.last_lsn;
  s.durable_lsn = d.syncer->durable_lsn();
  s.syncs = d.syncer->syncs();
  s.synced_records = d.syncer->synced_records();
  s.compacted_segments = d.compacted_segments;
  s.rewritten_bytes = d.rewritten_bytes;
  s.disk_full = d.disk_full;
  s.written_lsn = written_lsn();
  s.backlog_bytes = d.syncer->backlog_bytes();
  // The oldest change not written (synced) yet: the first entry past written_lsn (durable_lsn).
  const std::chrono::nanoseconds now = d.syncer->now();
  const auto age = [&](Lsn done) {
    for (const auto& [lsn, at] : d.appended_at) {
      if (lsn > done) return now > at ? std::chrono::duration<double>(now - at).count() : 0.0;
    }
    return 0.0;
  };
  s.oldest_unwritten_seconds = age(s.written_lsn);
  if (d.opt.sync != SyncPolicy::kNever) s.oldest_unsynced_seconds = age(s.durable_lsn);
  return s;
}

LogSyncMetrics JobLog::sync_metrics() const {
  return impl_->syncer->metrics();
}

bool JobLog::disk_full() const {
  return impl_->disk_full;
}

bool JobLog::failed() const {
  return impl_->failed;
}

}  // namespace wheel::jobs
