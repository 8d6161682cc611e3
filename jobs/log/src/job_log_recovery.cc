// SPDX-License-Identifier: Apache-2.0
// JobLog::open(): locks the directory, then replays the segments oldest first. Only the end of
// the last segment can be unsynced: every segment is synced whole before the next one starts,
// its start record is synced before anything follows it, and its kSynced records say how far
// it was synced. Damage in that unsynced end is a torn tail and is cut off; damage in anything
// synced, or a missing segment, stops the start naming file and byte offset, or is skipped with
// skip_corrupt.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include "job_log_impl.h"
#include "log_reader.h"
#include "record_codec.h"
#include "wheel/jobs/log/job_log.h"
#include "wheel/logger.h"

namespace wheel::jobs {
namespace {

void check_options(const JobLogOptions& o) {
  auto fail = [](const std::string& what) {
    throw std::invalid_argument("JobLogOptions: " + what);
  };
  if (o.dir.empty()) fail("dir is empty");
  if (o.sync == SyncPolicy::kInterval && (o.sync_interval_ms < 1 || o.sync_interval_ms > 3600000)) {
    fail("sync_interval_ms must be 1 .. 3,600,000");
  }
  if (o.segment_bytes < 4096 || o.segment_bytes > (1u << 30)) {
    fail("segment_bytes must be 4,096 .. 1,073,741,824");
  }
  if (o.reserve_bytes > (1u << 30)) fail("reserve_bytes must be 0 .. 1,073,741,824");
}

struct Replay {
  JobLog::Impl* d;
  std::uint64_t max_id = 0;
  std::uint64_t id_limit = 1;
  std::uint64_t nonce = 0;       // of the segment being replayed
  std::uint64_t synced_end = 0;  // its largest kSynced offset seen so far
  StoredJob scratch;             // reused: a put is decoded without allocating

  // Applies one record to the log's index (where each live job's latest put is, and its state
  // now); the jobs themselves are decoded once, at the end, from those puts. False (and *why)
  // when its payload is malformed.
  bool apply(std::uint64_t segment, const log::Record& r, bool first, std::string* why) {
    const auto type = static_cast<log::RecordType>(r.type);
    if (first != (type == log::RecordType::kSegmentStart)) {
      *why = first ? "segment does not begin with a segment-start record"
                   : "segment-start record inside a segment";
      return false;
    }
    switch (type) {
      case log::RecordType::kSegmentStart: {
        codec::SegmentStart s;
        if (!codec::decode_segment_start(r.payload, &s) || s.number != segment) {
          *why = "bad segment-start record (wrong magic, version or number)";
          return false;
        }
        id_limit = std::max(id_limit, s.id_limit);
        nonce = s.nonce;
        synced_end = 0;
        return true;
      }
      case log::RecordType::kPut: {
        StoredJob& job = scratch;
        if (!codec::decode_put(r.payload, &job, false)) break;
        max_id = std::max(max_id, job.id);
        const std::uint64_t size = codec::put_record_size(job, job.body_size);
        auto [it, inserted] = d->index.try_emplace(job.id);
        if (!inserted) d->live_bytes -= d->put_size(job.id, it->second.put);
        // The segment being replayed starts where the ones before it end.
        it->second = {
            {d->next_base() + r.offset, static_cast<std::uint32_t>(job.tube.size()), job.body_size},
            job.state,
            job.priority,
            job.due_unix_ms};
        d->live_bytes += size;
        if (codec::put_needs_counters(job)) {
          d->counters[job.id] = job.counters;
        } else {
          d->counters.erase(job.id);
        }
        d->changed_by_v1.erase(job.id);
        return true;
      }
      case log::RecordType::kUpdate: {
        StoredChange c;
        bool with_counters = false;
        if (!codec::decode_change(r.payload, &c, &with_counters)) break;
        // A change of a job whose put was compacted into a later segment: that put has it.
        auto it = d->index.find(c.id);
        if (it == d->index.end()) return true;
        it->second.state = c.state;
        it->second.priority = c.priority;
        it->second.due_unix_ms = c.due_unix_ms;
        if (with_counters) {
          d->set_counters(c.id, c.counters);
        } else {
          d->changed_by_v1.insert(c.id);
        }
        return true;
      }
      case log::RecordType::kDelete: {
        std::uint64_t id = 0;
        if (!codec::decode_u64(r.payload, &id)) break;
        max_id = std::max(max_id, id);
        if (auto it = d->index.find(id); it != d->index.end()) {
          d->live_bytes -= d->put_size(id, it->second.put);
          d->index.erase(it);
          d->counters.erase(id);
          d->changed_by_v1.erase(id);
        }
        return true;
      }
      case log::RecordType::kIdLimit: {
        std::uint64_t limit = 0;
        if (!codec::decode_u64(r.payload, &limit)) break;
        id_limit = std::max(id_limit, limit);
        return true;
      }
      case log::RecordType::kSynced: {
        codec::SyncedMark m;
        if (!codec::decode_synced(r.payload, &m)) break;
        if (m.nonce == nonce) synced_end = std::max(synced_end, m.offset);
        return true;
      }
      default:
        *why = "unknown record type " + std::to_string(r.type);
        return false;
    }
    *why = "malformed payload of a record of type " + std::to_string(r.type);
    return false;
  }
};

// The largest offset named by a kSynced record of this segment (`nonce`) found anywhere at or
// after `from`, valid records only.
std::uint64_t synced_mark_after(std::string_view data, std::uint64_t from, std::uint64_t nonce) {
  std::uint64_t best = 0;
  for (std::uint64_t pos = log::Reader::find_valid(data, from); pos < data.size();
       pos = log::Reader::find_valid(data, pos + 1)) {
    log::Reader reader(data, pos);
    log::Record rec;
    codec::SyncedMark m;
    if (reader.next(&rec) == log::Reader::Status::kRecord &&
        rec.type == static_cast<std::uint8_t>(log::RecordType::kSynced) &&
        codec::decode_synced(rec.payload, &m) && m.nonce == nonce) {
      best = std::max(best, m.offset);
    }
  }
  return best;
}

// Hands the live jobs to `each` by id, decoded from their latest puts (CRCs checked by the
// replay) with their state now, then frees the segments' bytes. 0 when they were taken.
std::uint64_t take_jobs(JobLog::Impl& d, const std::function<void(StoredJob&)>& each) {
  if (d.recovered_segments.empty()) return 0;
  // Sorting (id, entry) pairs spares a lookup per job; the entries stay put meanwhile.
  std::vector<std::pair<std::uint64_t, const LogIndex::Entry*>> live;
  live.reserve(d.index.size());
  for (const auto& [id, entry] : d.index) live.emplace_back(id, &entry);
  std::sort(live.begin(), live.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string_view cached;  // the segment of the previous job: most neighbours share one
  LogPosition cached_base = 0;
  LogPosition cached_end = 0;  // its valid bytes end here (a torn tail's data goes on)
  StoredJob job;
  for (const auto& [id, e] : live) {
    const LogPosition position = e->put.position;
    if (cached.empty() || position < cached_base || position >= cached_end) {
      std::uint64_t number = 0;
      std::uint64_t offset = 0;
      const SegmentInfo* info =
          d.segment_at(position, &number, &offset) ? d.segment_info(number) : nullptr;
      auto held = info != nullptr ? d.recovered_segments.find(number) : d.recovered_segments.end();
      if (held == d.recovered_segments.end()) {  // compaction ran first: a misuse
        throw std::logic_error("JobLog::take_recovered_jobs: called after the log changed");
      }
      cached = held->second->data();
      cached_base = position - offset;
      cached_end = cached_base + info->bytes;
    }
    const char* header = cached.data() + (position - cached_base);
    codec::decode_put(std::string_view(header + log::kHeaderSize, log::get_u32(header + 4)), &job,
                      d.load_recovered_bodies);  // decoded once already: it is well formed
    job.state = e->state;
    job.priority = e->priority;
    job.due_unix_ms = e->due_unix_ms;
    job.log_position = position;
    if (auto c = d.counters.find(id); c != d.counters.end()) job.counters = c->second;
    try {
      each(job);
    } catch (...) {
      d.recovered_segments.clear();  // taken or not, they are gone
      if (d.index_lent) std::unordered_map<std::uint64_t, LogIndex::Entry>().swap(d.index);
      throw;
    }
  }
  d.recovered_segments.clear();
  // An owner lent its index while the jobs were held back (lend_index() kept ours for this).
  if (d.index_lent) std::unordered_map<std::uint64_t, LogIndex::Entry>().swap(d.index);
  return live.size();
}

}  // namespace

std::uint64_t JobLog::take_recovered_jobs(const std::function<void(StoredJob&)>& each) {
  return take_jobs(*impl_, each);
}

std::unique_ptr<JobLog> JobLog::open(const JobLogOptions& options, Recovered* out,
                                     std::string* error) {
  check_options(options);
  FileSystem* fs = options.fs ? options.fs : &posix_file_system();
  auto d = std::make_unique<Impl>(options, fs);
  *out = Recovered{};
  auto fail = [&](const std::string& message) {
    *error = message;
    return std::unique_ptr<JobLog>();
  };
  if (auto ec = fs->create_dir(options.dir)) {
    return fail("cannot create " + options.dir + ": " + ec.message());
  }
  std::string problem;
  if (!d->lock_dir(&problem)) return fail(problem);  // before anything is read, cut or written
  std::uint64_t leased = 0;
  if (!d->read_id_lease(&leased, &problem)) return fail(problem);
  std::vector<std::string> names;
  if (auto ec = fs->list(options.dir, &names)) {
    return fail("cannot list " + options.dir + ": " + ec.message());
  }
  std::vector<std::uint64_t> numbers;
  for (const auto& name : names) {
    std::uint64_t n = 0;
    if (Impl::parse_segment_name(name, &n)) numbers.push_back(n);
  }
  std::sort(numbers.begin(), numbers.end());
  // Compaction removes the oldest segments only: a gap is a segment lost, with its jobs.
  for (std::size_t i = 1; i < numbers.size(); ++i) {
    if (numbers[i] == numbers[i - 1] + 1) continue;
    const std::string what = "segment " + d->segment_path(numbers[i - 1] + 1) +
                             " is missing (segments " + std::to_string(numbers[i - 1]) + " and " +
                             std::to_string(numbers[i]) + " are there)";
    if (!options.skip_corrupt) {
      return fail(what + " (the --skip-corrupt option starts without it)");
    }
    logger()->error("job log: {}; started without it", what);
  }

  // About one live job per 192 bytes of log (a 100-byte body's put is 152): most of the
  // index's rehashing is skipped, at the cost of idle buckets when bodies are much larger.
  std::uint64_t log_bytes = 0;
  for (std::uint64_t number : numbers) {
    std::uint64_t size = 0;
    if (!fs->file_size(d->segment_path(number), &size)) log_bytes += size;
  }
  d->index.reserve(static_cast<std::size_t>(log_bytes / 192));
  Replay replay{d.get(), 0, 1, 0, 0, {}};
  // Every segment's bytes stay (mapped: neither copied nor zeroed) until the jobs are decoded
  // from their latest puts (the log is at most 2x the live records plus two segments).
  for (std::size_t i = 0; i < numbers.size(); ++i) {
    const std::uint64_t number = numbers[i];
    const std::string path = d->segment_path(number);
    const bool last = i + 1 == numbers.size();
    std::unique_ptr<FileContents> contents;
    if (auto ec = fs->load_file(path, &contents)) {
      return fail("cannot read " + path + ": " + ec.message());
    }
    // Past a torn tail cut off below the bytes are never read again (a mapping past the new
    // end of the file would fault).
    const std::string_view data = contents->data();
    log::Reader reader(data);
    log::Record rec;
    bool first = true;
    replay.nonce = 0;
    replay.synced_end = 0;
    std::uint64_t end = data.size();
    for (;;) {
      const auto status = reader.next(&rec);
      if (status == log::Reader::Status::kEnd) break;
      std::string why;
      std::uint64_t bad = 0;
      if (status == log::Reader::Status::kRecord) {
        if (replay.apply(number, rec, first, &why)) {
          first = false;
          ++out->records;
          continue;
        }
        bad = rec.offset;
      } else {
        bad = reader.corrupt_offset();
        why = reader.reason();
      }
      const std::uint64_t next = log::Reader::find_valid(data, bad + 1);
      // Damage past everything a sync covered is a torn tail: unsynced pages may reach the disk
      // in any order, so valid records after the damage do not make it corruption. Damage
      // before a synced offset does (only the last segment has an unsynced part at all). The
      // start record is synced before anything is appended after it: a damaged one is a
      // segment torn at birth only when the file holds nothing past it.
      const bool synced =
          first ? data.size() > log::kHeaderSize + codec::kSegmentStartSize
                : std::max(replay.synced_end, synced_mark_after(data, bad + 1, replay.nonce)) > bad;
      if (last && !synced && status == log::Reader::Status::kCorrupt) {
        logger()->warn("job log: torn tail in {} at byte offset {} ({}): {} bytes cut off", path,
                       bad, why, data.size() - bad);
        out->torn_bytes += data.size() - bad;
        end = bad;
        break;
      }
      if (!options.skip_corrupt || next == data.size()) {
        return fail("corrupt record in " + path + " at byte offset " + std::to_string(bad) + ": " +
                    why + (options.skip_corrupt ? "" : " (the --skip-corrupt option skips it)"));
      }
      logger()->error("job log: corrupt record in {} at byte offset {} ({}): skipped {} bytes",
                      path, bad, why, next - bad);
      out->skipped_bytes += next - bad;
      reader.skip_to(next);
      first = false;  // past a damaged start record, the segment's other records still count
    }
    if (end < data.size()) {
      std::unique_ptr<WritableFile> file;
      std::error_code ec = fs->truncate(path, end);
      if (!ec) ec = fs->open_append(path, &file);
      if (!ec) ec = file->sync();  // the cut must hold before later segments depend on it
      if (ec) return fail("cannot cut the torn tail of " + path + ": " + ec.message());
    }
    if (first) {  // nothing valid in it (a segment torn at birth)
      if (auto ec = fs->remove(path)) return fail("cannot remove " + path + ": " + ec.message());
      continue;
    }
    d->segments.push_back({number, end, d->next_base()});
    d->total_bytes += end;
    out->bytes += end;
    d->recovered_segments.emplace(number, std::move(contents));
  }
  out->segments = d->segments.size();
  // The lease file covers every id handed out; the segments' limits and ids cover a log of an
  // older version (and a lease file skipped as damaged).
  d->next_id = std::max({leased, replay.id_limit, replay.max_id + 1});
  d->id_limit = d->next_id;
  out->next_id = d->next_id;
  out->live_jobs = d->index.size();
  d->load_recovered_bodies = options.load_bodies;
  if (!options.defer_jobs) {
    out->jobs.reserve(d->index.size());
    take_jobs(*d, [out](StoredJob& job) { out->jobs.push_back(std::move(job)); });
  }

  d->count_segment_live();
  d->syncer = std::make_unique<Syncer>(fs, options.dir, options.sync_thread, options.wakeup,
                                       options.sync_clock);
  const std::uint64_t head = d->segments.empty() ? 1 : d->segments.back().number + 1;
  if (auto ec = d->start_segment(head)) {
    return fail("cannot start segment " + d->segment_path(head) + ": " + ec.message());
  }
  if (auto ec = d->create_reserve()) {
    if (ec != std::errc::no_space_on_device) {
      return fail("cannot create " + options.dir + "/" + kReserveFile + ": " + ec.message());
    }
    d->enter_disk_full();
  }
  logger()->info("job log in {}: {} live jobs from {} segments ({} bytes, {} records)", options.dir,
                 out->live_jobs, out->segments, out->bytes, out->records);
  return std::unique_ptr<JobLog>(new JobLog(std::move(d)));
}

}  // namespace wheel::jobs
