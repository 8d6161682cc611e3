// SPDX-License-Identifier: Apache-2.0
// TimeIndex's work between open and close: entries staged with their record's LSN, flushed in
// the order that keeps the index behind the log (an entry is written once its record is
// durable; its file is synced before the checkpoint names it), buckets read back in due order,
// and buckets dropped (checkpoint first, file after).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cassert>
#include <stdexcept>
#include <unordered_map>

#include "time_index_format.h"
#include "wheel/jobs/log/log_error.h"
#include "wheel/jobs/log/time_index.h"
#include "wheel/logger.h"

namespace wheel::jobs {

static_assert(TimeIndex::kEntrySize == tix::kEntrySize);

void TimeIndex::stage(std::uint8_t kind, const TimeEntry& entry, Lsn lsn) {
  if (entry.due_unix_ms < 0) {
    throw std::invalid_argument("TimeIndex: a due time before 1970 (" +
                                std::to_string(entry.due_unix_ms) + " ms)");
  }
  assert(lsn >= last_staged_lsn_);  // log order: flush() releases a prefix
  last_staged_lsn_ = lsn;
  staged_.push_back({entry, kind, lsn});
  Bucket& b = buckets_[bucket_of(entry.due_unix_ms)];
  if (kind == tix::kPut) {
    ++b.live;
    ++live_;
  } else if (b.live > 0) {
    --b.live;
    --live_;
  }
}

void TimeIndex::add(const TimeEntry& entry, Lsn record_lsn) {
  stage(tix::kPut, entry, record_lsn);
}

void TimeIndex::remove(std::int64_t due_unix_ms, std::uint64_t id, Lsn record_lsn) {
  stage(tix::kGone, TimeEntry{due_unix_ms, id, 0}, record_lsn);
}

std::error_code TimeIndex::flush(Lsn durable_lsn, std::uint64_t replay_from) {
  if (failed_) return LogError::kFailed;
  // Only records the log has made durable: an entry written before its record could survive
  // a power cut that its record does not.
  std::size_t n = 0;
  while (n < staged_.size() && staged_[n].lsn <= durable_lsn) ++n;
  struct Out {
    std::string bytes;
    std::uint64_t puts = 0;
    std::uint64_t gones = 0;
  };
  std::map<std::uint64_t, Out> out;
  for (std::size_t i = 0; i < n; ++i) {
    const Staged& s = staged_[i];
    Out& o = out[bucket_of(s.entry.due_unix_ms)];
    tix::append_entry(&o.bytes, {s.kind, s.entry.due_unix_ms, s.entry.id, s.entry.log_ref});
    ++(s.kind == tix::kPut ? o.puts : o.gones);
  }
  std::vector<std::uint64_t> touched;
  bool made_file = false;
  std::error_code ec;
  for (const auto& [bucket, o] : out) {
    const std::string path = bucket_path(bucket);
    if (buckets_[bucket].bytes == 0) {
      fs_->remove(path);  // a dropped bucket's file whose removal failed: start it afresh
      made_file = true;
    }
    std::unique_ptr<WritableFile> file;
    if ((ec = fs_->open_append(path, &file))) break;
    touched.push_back(bucket);
    ec = file->append(std::as_bytes(std::span(o.bytes.data(), o.bytes.size())));
    // Synced before the checkpoint names these bytes: else a power cut loses bytes the
    // checkpoint says are there.
    if (!ec) ec = file->sync();
    if (ec) break;
  }
  if (!ec && made_file) ec = fs_->sync_dir(opt_.dir);
  if (ec) {
    logger()->error("time index in {}: flush failed ({}); {} entries stay staged", opt_.dir,
                    ec.message(), n);
    // Cut back what this flush wrote, so the next one appends after whole entries.
    for (std::uint64_t bucket : touched) {
      const std::uint64_t bytes = buckets_[bucket].bytes;
      const std::string path = bucket_path(bucket);
      const std::error_code cut = bytes == 0 ? fs_->remove(path) : fs_->truncate(path, bytes);
      if (cut && cut != std::errc::no_such_file_or_directory) {
        logger()->error("time index in {}: cannot cut {} back ({}); flushes stop until a restart",
                        opt_.dir, path, cut.message());
        failed_ = true;
      }
    }
    return ec;
  }
  for (const auto& [bucket, o] : out) {
    Bucket& b = buckets_[bucket];
    b.bytes += o.bytes.size();
    b.puts += o.puts;
    b.gones += o.gones;
  }
  staged_.erase(staged_.begin(), staged_.begin() + static_cast<std::ptrdiff_t>(n));
  if (auto cec = write_checkpoint(replay_from)) {
    // The files are synced; the old checkpoint still holds (open() cuts them back to it, and
    // the owner replays the log from its older replay_from). The next flush tries again.
    logger()->error("time index in {}: cannot write the checkpoint ({})", opt_.dir, cec.message());
    return cec;
  }
  return {};
}

std::error_code TimeIndex::read_bucket(std::uint64_t bucket,
                                       std::vector<TimeEntry>* entries) const {
  entries->clear();
  auto it = buckets_.find(bucket);
  if (it == buckets_.end()) return {};
  // Puts in order, each id's latest; a gone takes out the put before it.
  std::unordered_map<std::uint64_t, std::size_t> at;
  std::vector<bool> gone;
  auto apply = [&](std::uint8_t kind, const TimeEntry& e) {
    auto found = at.find(e.id);
    if (kind == tix::kGone) {
      if (found != at.end()) {
        gone[found->second] = true;
        at.erase(found);
      }
      return;
    }
    if (found != at.end()) gone[found->second] = true;
    at[e.id] = entries->size();
    entries->push_back(e);
    gone.push_back(false);
  };
  const std::uint64_t bytes = it->second.bytes;
  if (bytes > 0) {
    const std::string path = bucket_path(bucket);
    std::string data;
    if (auto ec = fs_->read_range(path, 0, bytes, &data)) {
      logger()->error("time index: cannot read {} ({})", path, ec.message());
      return ec;
    }
    if (data.size() < bytes) {
      logger()->error("time index: {} has {} bytes, {} were synced", path, data.size(), bytes);
      return std::make_error_code(std::errc::illegal_byte_sequence);
    }
    entries->reserve(bytes / kEntrySize);
    for (std::uint64_t off = 0; off + kEntrySize <= bytes; off += kEntrySize) {
      tix::Fields e;
      if (!tix::decode_entry(data.data() + off, &e)) {
        logger()->error("time index: damaged entry in {} at byte offset {}", path, off);
        entries->clear();
        return std::make_error_code(std::errc::illegal_byte_sequence);
      }
      apply(e.kind, TimeEntry{e.due_unix_ms, e.id, e.log_ref});
    }
  }
  for (const Staged& s : staged_) {
    if (bucket_of(s.entry.due_unix_ms) == bucket) apply(s.kind, s.entry);
  }
  std::size_t kept = 0;
  for (std::size_t i = 0; i < entries->size(); ++i) {
    if (!gone[i]) (*entries)[kept++] = (*entries)[i];
  }
  entries->resize(kept);
  std::sort(entries->begin(), entries->end(), [](const TimeEntry& a, const TimeEntry& b) {
    return a.due_unix_ms != b.due_unix_ms ? a.due_unix_ms < b.due_unix_ms : a.id < b.id;
  });
  return {};
}

std::error_code TimeIndex::drop_bucket(std::uint64_t bucket) {
  auto it = buckets_.find(bucket);
  if (it == buckets_.end()) return {};
  const Bucket saved = it->second;
  buckets_.erase(it);
  if (saved.bytes > 0) {
    // The checkpoint stops naming the file before the file goes: a crash between the two
    // leaves a file open() removes, never a checkpoint naming a missing file.
    if (auto ec = write_checkpoint(replay_from_)) {
      buckets_[bucket] = saved;
      return ec;
    }
    const std::string path = bucket_path(bucket);
    if (auto ec = fs_->remove(path)) {
      logger()->warn("time index: cannot remove dropped bucket {} ({}); removed at the next open",
                     path, ec.message());
    }
  }
  std::erase_if(staged_, [&](const Staged& s) { return bucket_of(s.entry.due_unix_ms) == bucket; });
  live_ -= saved.live;
  return {};
}

}  // namespace wheel::jobs
