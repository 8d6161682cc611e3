// SPDX-License-Identifier: Apache-2.0
// TimeIndex's files: opening (the checkpoint read, bucket files cut back to it) and the
// checkpoint written whole (beside, synced, renamed, directory synced, as the id lease is). The
// staging, flush, reads and drops are in time_index_flush.cc.
#include <spdlog/spdlog.h>

#include <array>
#include <cinttypes>
#include <cstdio>
#include <set>
#include <stdexcept>

#include "replace_file.h"
#include "time_index_format.h"
#include "wheel/jobs/log/time_index.h"
#include "wheel/logger.h"

namespace wheel::jobs {

TimeIndex::TimeIndex(const TimeIndexOptions& options, FileSystem* fs) : opt_(options), fs_(fs) {}

TimeIndex::~TimeIndex() = default;

std::unique_ptr<TimeIndex> TimeIndex::open(const TimeIndexOptions& options,
                                           TimeIndexRecovered* recovered, std::string* error) {
  if (options.bucket_ms < 60'000 || options.bucket_ms > 86'400'000) {
    throw std::invalid_argument("TimeIndexOptions::bucket_ms must be 60000 .. 86400000, got " +
                                std::to_string(options.bucket_ms));
  }
  if (options.journal_entries < 1 || options.journal_entries > (std::uint64_t{1} << 26)) {
    throw std::invalid_argument("TimeIndexOptions::journal_entries must be 1 .. 67108864, got " +
                                std::to_string(options.journal_entries));
  }
  FileSystem* fs = options.fs != nullptr ? options.fs : &posix_file_system();
  std::unique_ptr<TimeIndex> index(new TimeIndex(options, fs));
  *recovered = TimeIndexRecovered{};
  if (!index->recover(recovered, error)) return nullptr;
  return index;
}

std::string TimeIndex::bucket_path(std::uint64_t bucket) const {
  char name[32];
  std::snprintf(name, sizeof name, "%020" PRIu64 "%s", bucket, tix::kSuffix);
  return opt_.dir + "/" + name;
}

std::string TimeIndex::journal_path() const {
  char name[48];
  std::snprintf(name, sizeof name, "%s%020" PRIu64 "%s", tix::kJournalPrefix, journal_number_,
                tix::kSuffix);
  return opt_.dir + "/" + name;
}

std::uint64_t TimeIndex::bucket_of(std::int64_t due_unix_ms) const {
  return static_cast<std::uint64_t>(due_unix_ms < 0 ? 0 : due_unix_ms) / opt_.bucket_ms;
}

std::uint64_t TimeIndex::live_in(std::uint64_t bucket) const {
  auto it = buckets_.find(bucket);
  return it == buckets_.end() ? 0 : it->second.live;
}

std::vector<TimeBucketInfo> TimeIndex::buckets() const {
  std::vector<TimeBucketInfo> out;
  out.reserve(buckets_.size());
  for (const auto& [number, b] : buckets_) out.push_back({number, b.live});
  return out;
}

namespace {

// Parses the checkpoint's bytes; false and *why when they are not one whole checkpoint.
struct Named {
  std::uint64_t bucket_ms = 0;
  std::uint64_t replay_from = 0;
  std::uint64_t journal_number = 1;
  std::uint64_t journal_bytes = 0;
  std::map<std::uint64_t, std::array<std::uint64_t, 4>> buckets;  // bytes, puts, gones, journaled
};

bool parse_checkpoint(std::string_view data, Named* named, std::string* why) {
  if (data.size() < tix::kCheckpointHeader + tix::kCheckpointFixed) {
    *why = "shorter than a checkpoint";
    return false;
  }
  const std::uint32_t length = log::get_u32(data.data() + 4);
  if (length != data.size() - tix::kCheckpointHeader) {
    *why = "its length says " + std::to_string(length) + " bytes";
    return false;
  }
  if (crc32c::unmask(log::get_u32(data.data())) != crc32c::value(data.data() + 4, length + 4)) {
    *why = "its CRC does not match";
    return false;
  }
  const char* p = data.data() + tix::kCheckpointHeader;
  if (std::string_view(p, 4) != "WTIX" || log::get_u32(p + 4) != tix::kVersion) {
    *why = "not a version 1 time index checkpoint";
    return false;
  }
  named->bucket_ms = log::get_u64(p + 8);
  named->replay_from = log::get_u64(p + 16);
  named->journal_number = log::get_u64(p + 24);
  named->journal_bytes = log::get_u64(p + 32);
  const std::uint64_t count = log::get_u64(p + 40);
  if (count != (length - tix::kCheckpointFixed) / tix::kCheckpointPerBucket ||
      (length - tix::kCheckpointFixed) % tix::kCheckpointPerBucket != 0) {
    *why = "its bucket count does not match its length";
    return false;
  }
  p += tix::kCheckpointFixed;
  for (std::uint64_t i = 0; i < count; ++i, p += tix::kCheckpointPerBucket) {
    named->buckets[log::get_u64(p)] = {log::get_u64(p + 8), log::get_u64(p + 16),
                                       log::get_u64(p + 24), log::get_u64(p + 32)};
  }
  return true;
}

}  // namespace

bool TimeIndex::recover(TimeIndexRecovered* recovered, std::string* error) {
  if (auto ec = fs_->create_dir(opt_.dir)) {
    *error = "cannot create " + opt_.dir + ": " + ec.message();
    return false;
  }
  const std::string checkpoint = opt_.dir + "/" + tix::kCheckpointFile;
  std::string data;
  Named named;
  named.bucket_ms = opt_.bucket_ms;
  if (auto ec = fs_->read_file(checkpoint, &data)) {
    if (ec != std::errc::no_such_file_or_directory) {
      *error = "cannot read " + checkpoint + ": " + ec.message();
      return false;
    }
  } else if (std::string why; !parse_checkpoint(data, &named, &why)) {
    *error = "damaged time index checkpoint " + checkpoint + ": " + why;
    return false;
  }
  if (named.bucket_ms != opt_.bucket_ms) {
    *error = "the time index in " + opt_.dir + " has buckets of " +
             std::to_string(named.bucket_ms) + " ms, not " + std::to_string(opt_.bucket_ms);
    return false;
  }
  replay_from_ = named.replay_from;
  journal_number_ = named.journal_number;
  journal_bytes_ = named.journal_bytes;
  // A file the checkpoint names, cut back to its length: what a crash left past it (torn or
  // not) was written by a flush or split that never reached its checkpoint.
  auto cut_to = [&](const std::string& path, std::uint64_t bytes) {
    std::uint64_t size = 0;
    if (auto ec = fs_->file_size(path, &size)) {
      *error = "cannot read the size of " + path + ": " + ec.message();
      return false;
    }
    if (size < bytes) {
      *error = "time index file " + path + " has " + std::to_string(size) +
               " bytes; its checkpoint says " + std::to_string(bytes) +
               " were synced (lost data: rebuild the index from the log)";
      return false;
    }
    if (size > bytes) {
      if (auto ec = fs_->truncate(path, bytes)) {
        *error =
            "cannot cut " + path + " back to " + std::to_string(bytes) + " bytes: " + ec.message();
        return false;
      }
      logger()->info("time index: cut {} bytes past the checkpoint off {}", size - bytes, path);
      recovered->cut_bytes += size - bytes;
    }
    return true;
  };
  std::vector<std::string> names;
  if (auto ec = fs_->list(opt_.dir, &names)) {
    *error = "cannot list " + opt_.dir + ": " + ec.message();
    return false;
  }
  bool journal_seen = false;
  std::set<std::uint64_t> seen;
  for (const std::string& name : names) {
    const std::string path = opt_.dir + "/" + name;
    std::uint64_t number = 0;
    bool keep = false;
    if (tix::parse_bucket_name(name, &number, tix::kJournalPrefix)) {
      keep = number == journal_number_;
      if (keep && !cut_to(path, journal_bytes_)) return false;
      journal_seen = journal_seen || keep;
    } else if (tix::parse_bucket_name(name, &number)) {
      auto it = named.buckets.find(number);
      keep = it != named.buckets.end() && it->second[0] > 0;
      if (keep && !cut_to(path, it->second[0])) return false;
      if (keep) seen.insert(number);
    } else {
      if (name == std::string(tix::kCheckpointFile) + ".tmp") fs_->remove(path);
      continue;
    }
    if (!keep) {
      // Made by a flush or split a crash stopped before its checkpoint, an old journal, or a
      // dropped bucket's: nothing in it counts.
      if (auto ec = fs_->remove(path)) {
        *error = "cannot remove " + path + ": " + ec.message();
        return false;
      }
      ++recovered->removed_files;
    }
  }
  if (journal_bytes_ > 0 && !journal_seen) {
    *error = "time index journal " + journal_path() + " is missing; its checkpoint says " +
             std::to_string(journal_bytes_) + " bytes were synced (rebuild the index from the log)";
    return false;
  }
  for (const auto& [bucket, f] : named.buckets) {
    if (f[0] > 0 && !seen.contains(bucket)) {
      *error = "time index bucket " + bucket_path(bucket) + " is missing; its checkpoint says " +
               std::to_string(f[0]) + " bytes were synced (rebuild the index from the log)";
      return false;
    }
    Bucket& b = buckets_[bucket];
    b.bytes = f[0];
    b.puts = f[1];
    b.gones = f[2];
    b.journaled = f[3];
    b.live = b.puts >= b.gones ? b.puts - b.gones : 0;
    live_ += b.live;
  }
  recovered->replay_from = replay_from_;
  recovered->buckets = buckets_.size();
  recovered->live = live_;
  return true;
}

std::error_code TimeIndex::write_checkpoint(std::uint64_t replay_from) {
  std::string rec(tix::kCheckpointHeader, '\0');
  rec.append("WTIX");
  log::put_u32(&rec, tix::kVersion);
  log::put_u64(&rec, opt_.bucket_ms);
  log::put_u64(&rec, replay_from);
  log::put_u64(&rec, journal_number_);
  log::put_u64(&rec, journal_bytes_);
  // A bucket with staged entries only is not named: nothing of it is on disk yet.
  auto on_disk = [](const Bucket& b) { return b.bytes > 0 || b.journaled > 0; };
  std::uint64_t count = 0;
  for (const auto& [number, b] : buckets_) count += on_disk(b) ? 1 : 0;
  log::put_u64(&rec, count);
  for (const auto& [number, b] : buckets_) {
    if (!on_disk(b)) continue;
    log::put_u64(&rec, number);
    log::put_u64(&rec, b.bytes);
    log::put_u64(&rec, b.puts);
    log::put_u64(&rec, b.gones);
    log::put_u64(&rec, b.journaled);
  }
  const auto length = static_cast<std::uint32_t>(rec.size() - tix::kCheckpointHeader);
  log::store_u32(rec.data() + 4, length);
  log::store_u32(rec.data(), crc32c::mask(crc32c::value(rec.data() + 4, length + 4)));
  const std::error_code ec =
      log::replace_file(*fs_, opt_.dir + "/" + tix::kCheckpointFile, opt_.dir, rec);
  if (!ec) replay_from_ = replay_from;
  return ec;
}

}  // namespace wheel::jobs
