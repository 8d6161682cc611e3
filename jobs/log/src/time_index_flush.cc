// SPDX-License-Identifier: Apache-2.0
// TimeIndex's work between open and close: entries staged with their record's LSN, flushed to
// the journal in the order that keeps the index behind the log (an entry is written once its
// record is durable; the journal is synced before the checkpoint names it), the journal split
// into the bucket files (each synced before the checkpoint that forgets the journal), buckets
// read back in due order, and buckets dropped (checkpoint first, file after).
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

namespace {

struct Out {
  std::string bytes;
  std::uint64_t puts = 0;
  std::uint64_t gones = 0;
};

}  // namespace

bool TimeIndex::cut_back(const std::vector<std::pair<std::string, std::uint64_t>>& files) {
  for (const auto& [path, bytes] : files) {
    const std::error_code cut = bytes == 0 ? fs_->remove(path) : fs_->truncate(path, bytes);
    if (cut && cut != std::errc::no_such_file_or_directory) {
      logger()->error("time index in {}: cannot cut {} back ({}); flushes stop until a restart",
                      opt_.dir, path, cut.message());
      failed_ = true;
    }
  }
  return !failed_;
}

std::error_code TimeIndex::flush(Lsn durable_lsn, std::uint64_t replay_from) {
  if (failed_) return LogError::kFailed;
  // Only records the log has made durable: an entry written before its record could survive
  // a power cut that its record does not.
  std::size_t n = 0;
  while (n < staged_.size() && staged_[n].lsn <= durable_lsn) ++n;
  if (n > 0) {
    std::string bytes;
    bytes.reserve(n * kEntrySize);
    std::map<std::uint64_t, Out> counts;
    for (std::size_t i = 0; i < n; ++i) {
      const Staged& s = staged_[i];
      tix::append_entry(&bytes, {s.kind, s.entry.due_unix_ms, s.entry.id, s.entry.log_ref});
      Out& o = counts[bucket_of(s.entry.due_unix_ms)];
      ++(s.kind == tix::kPut ? o.puts : o.gones);
    }
    const std::string path = journal_path();
    const bool made = journal_bytes_ == 0;
    if (made) fs_->remove(path);  // a stopped flush's leftover: start it afresh
    std::unique_ptr<WritableFile> file;
    std::error_code ec = fs_->open_append(path, &file);
    if (!ec) ec = file->append(std::as_bytes(std::span(bytes.data(), bytes.size())));
    // Synced before the checkpoint names these bytes: else a power cut loses bytes the
    // checkpoint says are there.
    if (!ec) ec = file->sync();
    file.reset();
    if (!ec && made) ec = fs_->sync_dir(opt_.dir);
    if (ec) {
      logger()->error("time index in {}: flush failed ({}); {} entries stay staged", opt_.dir,
                      ec.message(), n);
      cut_back({{path, journal_bytes_}});  // so the next flush appends after whole entries
      return ec;
    }
    journal_bytes_ += bytes.size();
    for (const auto& [bucket, o] : counts) {
      Bucket& b = buckets_[bucket];
      b.puts += o.puts;
      b.gones += o.gones;
      b.journaled += o.puts + o.gones;
    }
    staged_.erase(staged_.begin(), staged_.begin() + static_cast<std::ptrdiff_t>(n));
  }
  if (auto ec = write_checkpoint(replay_from)) {
    // The journal is synced; the old checkpoint still holds (open() cuts the journal back to
    // it, and the owner replays the log from its older replay_from). The next flush tries again.
    logger()->error("time index in {}: cannot write the checkpoint ({})", opt_.dir, ec.message());
    return ec;
  }
  if (journal_bytes_ / kEntrySize >= opt_.journal_entries) return split();
  return {};
}

std::error_code TimeIndex::split() {
  if (journal_bytes_ == 0) return {};
  const std::string old_journal = journal_path();
  std::string data;
  if (auto ec = fs_->read_range(old_journal, 0, journal_bytes_, &data)) return ec;
  if (data.size() < journal_bytes_) return std::make_error_code(std::errc::illegal_byte_sequence);
  std::map<std::uint64_t, Out> out;
  for (std::uint64_t off = 0; off < journal_bytes_; off += kEntrySize) {
    tix::Fields e;
    if (!tix::decode_entry(data.data() + off, &e)) {
      logger()->error("time index: damaged entry in {} at byte offset {}", old_journal, off);
      return std::make_error_code(std::errc::illegal_byte_sequence);
    }
    const std::uint64_t bucket = bucket_of(e.due_unix_ms);
    if (!buckets_.contains(bucket)) continue;  // cannot happen: a drop splits first
    tix::append_entry(&out[bucket].bytes, e);
  }
  std::vector<std::pair<std::string, std::uint64_t>> touched;
  bool made_file = false;
  std::error_code ec;
  for (const auto& [bucket, o] : out) {
    const std::string path = bucket_path(bucket);
    const std::uint64_t bytes = buckets_[bucket].bytes;
    if (bytes == 0) {
      fs_->remove(path);  // a stopped split's or a dropped bucket's leftover: start it afresh
      made_file = true;
    }
    std::unique_ptr<WritableFile> file;
    if ((ec = fs_->open_append(path, &file))) break;
    touched.emplace_back(path, bytes);
    ec = file->append(std::as_bytes(std::span(o.bytes.data(), o.bytes.size())));
    // Synced before the checkpoint names these bytes and forgets the journal that held them.
    if (!ec) ec = file->sync();
    if (ec) break;
  }
  if (!ec && made_file) ec = fs_->sync_dir(opt_.dir);
  if (ec) {
    logger()->error("time index in {}: splitting the journal failed ({})", opt_.dir, ec.message());
    cut_back(touched);
    return ec;
  }
  for (auto& [bucket, b] : buckets_) {
    auto it = out.find(bucket);
    if (it != out.end()) b.bytes += it->second.bytes.size();
    b.journaled = 0;
  }
  ++journal_number_;
  journal_bytes_ = 0;
  if ((ec = write_checkpoint(replay_from_))) {
    // In memory the split is done; on disk the old checkpoint (old journal, shorter bucket
    // files) holds until the next checkpoint, which names the new journal.
    logger()->error("time index in {}: cannot write the checkpoint ({})", opt_.dir, ec.message());
    return ec;
  }
  fs_->remove(old_journal);  // if this fails, open() removes it (no checkpoint names it)
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
  // The entries of this bucket in `data` (the first `bytes` of file `path`).
  auto scan = [&](const std::string& path, const std::string& data,
                  std::uint64_t bytes) -> std::error_code {
    if (data.size() < bytes) {
      logger()->error("time index: {} has {} bytes, {} were synced", path, data.size(), bytes);
      entries->clear();
      return std::make_error_code(std::errc::illegal_byte_sequence);
    }
    for (std::uint64_t off = 0; off + kEntrySize <= bytes; off += kEntrySize) {
      tix::Fields e;
      if (!tix::decode_entry(data.data() + off, &e)) {
        logger()->error("time index: damaged entry in {} at byte offset {}", path, off);
        entries->clear();
        return std::make_error_code(std::errc::illegal_byte_sequence);
      }
      if (bucket_of(e.due_unix_ms) == bucket) {
        apply(e.kind, TimeEntry{e.due_unix_ms, e.id, e.log_ref});
      }
    }
    return {};
  };
  const std::uint64_t bytes = it->second.bytes;
  if (bytes > 0) {
    const std::string path = bucket_path(bucket);
    std::string data;
    if (auto ec = fs_->read_range(path, 0, bytes, &data)) {
      logger()->error("time index: cannot read {} ({})", path, ec.message());
      return ec;
    }
    entries->reserve(bytes / kEntrySize);
    if (auto ec = scan(path, data, bytes)) return ec;
  }
  if (it->second.journaled > 0) {
    const std::string path = journal_path();
    std::string data;
    if (auto ec = fs_->read_range(path, 0, journal_bytes_, &data)) {
      logger()->error("time index: cannot read {} ({})", path, ec.message());
      return ec;
    }
    if (auto ec = scan(path, data, journal_bytes_)) return ec;
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
  if (it->second.journaled > 0) {
    // Else its journal entries would come back into a later bucket of the same number.
    if (auto ec = split()) return ec;
    it = buckets_.find(bucket);
  }
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
