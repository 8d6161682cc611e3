// SPDX-License-Identifier: Apache-2.0
// JobLog: appends, group commit, the id lease and the disk-full state. Open and replay are in
// job_log_recovery.cc, compaction in job_log_compaction.cc.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <limits>
#include <random>
#include <stdexcept>

#include "job_log_impl.h"
#include "record_codec.h"
#include "wheel/logger.h"

namespace wheel::jobs {
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
    }
    return "unknown job log error";
  }
};

bool is_no_space(std::error_code ec) {
  return ec == std::errc::no_space_on_device;
}

}  // namespace

const std::error_category& log_category() {
  static LogCategory category;
  return category;
}

JobLog::Impl::Impl(const JobLogOptions& options, FileSystem* file_system)
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
  log::append_record(&rec, log::RecordType::kSegmentStart,
                     codec::encode_segment_start({number, std::max(id_limit, next_id), nonce}));
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
  segments.push_back({number, rec.size()});
  total_bytes += rec.size();
  if (next_id > id_limit) id_limit = next_id;
  return {};
}

std::error_code JobLog::Impl::rotate() {
  // The old head is synced in full first, for the same reason as in start_segment().
  if (auto ec = head->sync()) return ec;
  return start_segment(segments.back().number + 1);
}

std::error_code JobLog::Impl::append(log::RecordType type, std::string_view payload,
                                     bool may_use_reserve, JobLog::Lsn* lsn, std::uint64_t* segment,
                                     std::uint64_t* offset) {
  if (failed) return LogError::kFailed;
  if (disk_full && !may_use_reserve) return LogError::kDiskFull;
  std::string rec;
  log::append_record(&rec, type, payload);
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
  *segment = seg.number;
  *offset = seg.bytes;
  seg.bytes += rec.size();
  total_bytes += rec.size();
  if (type != log::RecordType::kSynced) ++last_lsn;
  *lsn = last_lsn;
  syncer->note_written(head, last_lsn, seg.number, seg.bytes, rec.size());
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

std::error_code JobLog::Impl::ensure_id_lease() {
  if (next_id < id_limit) return {};
  // Record, durably, that ids up to next_id + kIdLease may be used before using any of them:
  // a put lost with an unsynced tail can then never give its id to another job.
  JobLog::Lsn lsn = 0;
  std::uint64_t seg = 0;
  std::uint64_t off = 0;
  const std::uint64_t limit = next_id + kIdLease;
  if (auto ec =
          append(log::RecordType::kIdLimit, codec::encode_u64(limit), false, &lsn, &seg, &off)) {
    return ec;
  }
  if (auto ec = sync_inline()) return ec;
  id_limit = limit;
  return {};
}

JobLog::JobLog(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

JobLog::~JobLog() {
  if (!impl_->failed && impl_->syncer->durable_lsn() < impl_->last_lsn) impl_->syncer->sync_now();
}

std::error_code JobLog::allocate_id(std::uint64_t* id) {
  if (auto ec = impl_->ensure_id_lease()) return ec;
  *id = impl_->next_id++;
  return {};
}

std::error_code JobLog::put(const StoredJob& job, Lsn* lsn) {
  if (job.tube.size() > 255 || job.body.size() > (1u << 30) || job.id >= impl_->next_id) {
    throw std::invalid_argument(
        "JobLog::put: tube over 255 bytes, body over 1 GiB or id not allocated");
  }
  std::uint64_t seg = 0;
  std::uint64_t off = 0;
  if (auto ec =
          impl_->append(log::RecordType::kPut, codec::encode_put(job), false, lsn, &seg, &off)) {
    return ec;
  }
  const std::uint64_t size = codec::put_record_size(job);
  auto [it, inserted] = impl_->index.try_emplace(job.id);
  if (!inserted) impl_->live_bytes -= it->second.put_size;
  it->second = {seg, off, size, job.state, job.priority, job.due_unix_ms};
  impl_->live_bytes += size;
  if (codec::put_needs_counters(job)) {
    impl_->counters[job.id] = job.counters;
  } else {
    impl_->counters.erase(job.id);
  }
  return {};
}

void JobLog::Impl::set_counters(std::uint64_t id, const StoredCounters& c) {
  auto [it, fresh] = counters.insert_or_assign(id, c);
  if (!fresh) return;
  // The job's next put (compaction) carries them: count them live now (compaction recounts).
  auto entry = index.find(id);
  if (entry == index.end()) return;
  entry->second.put_size += codec::kCountersSize;
  live_bytes += codec::kCountersSize;
}

std::error_code JobLog::change(const StoredChange& change, Lsn* lsn) {
  auto it = impl_->index.find(change.id);
  if (it == impl_->index.end()) throw std::invalid_argument("JobLog::change: no such live job");
  std::uint64_t seg = 0;
  std::uint64_t off = 0;
  if (auto ec = impl_->append(log::RecordType::kUpdate, codec::encode_change(change), false, lsn,
                              &seg, &off)) {
    return ec;
  }
  it->second.state = change.state;
  it->second.priority = change.priority;
  it->second.due_unix_ms = change.due_unix_ms;
  impl_->set_counters(change.id, change.counters);
  return {};
}

std::error_code JobLog::remove(std::uint64_t id, Lsn* lsn) {
  auto it = impl_->index.find(id);
  if (it == impl_->index.end()) throw std::invalid_argument("JobLog::remove: no such live job");
  std::uint64_t seg = 0;
  std::uint64_t off = 0;
  if (auto ec =
          impl_->append(log::RecordType::kDelete, codec::encode_u64(id), true, lsn, &seg, &off)) {
    return ec;
  }
  impl_->live_bytes -= it->second.put_size;
  impl_->index.erase(it);
  impl_->counters.erase(id);
  return {};
}

void JobLog::commit() {
  if (impl_->failed || impl_->opt.sync != SyncPolicy::kAlways) return;
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
  if (auto ec = d.syncer->failure()) d.note_failure("fdatasync", ec);
  if (d.failed) return;
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
  d.check_space(now_ms);
  d.compact(1);
}

std::uint64_t JobLog::next_poll_ms() const {
  std::uint64_t next = std::numeric_limits<std::uint64_t>::max();
  if (impl_->opt.sync == SyncPolicy::kInterval) {
    next = impl_->interval_started ? impl_->last_interval_sync_ms + impl_->opt.sync_interval_ms : 0;
  }
  if (impl_->disk_full && impl_->next_space_check_ms < next) next = impl_->next_space_check_ms;
  return next;
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
  return s;
}

LogSyncMetrics JobLog::sync_metrics() const {
  return impl_->syncer->metrics();
}

bool JobLog::disk_full() const {
  return impl_->disk_full;
}

}  // namespace wheel::jobs
