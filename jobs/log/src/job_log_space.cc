// SPDX-License-Identifier: Apache-2.0
// Compaction on a full disk: deletes give puts their room back.
//
// The usual steps (job_log_compaction.cc) copy the oldest segment's live puts to the head, and
// only once the log passes its bound. On a full disk there is no room for that copy, and once
// deletes are spread over every segment the oldest is no emptier than the others. So while the
// disk is full each poll takes one step that gives space back: the oldest segment, when none of
// its jobs lives, is removed; else the closed segment that frees the most, among those whose
// rewrite fits in the free space (and frees at least 1/8 of it), is rewritten in place. The
// rewrite keeps its number and holds its start record, its id limits, its live puts (each with
// its state now) and what a replay of the later segments still needs from it: the updates of
// live jobs put elsewhere and the deletes of jobs put in older segments. It is written to
// kRewriteFile, synced, renamed over the segment, and the directory synced: a crash leaves
// either the old segment or the new one. The head is synced first, so that the new segment says
// nothing the log does not already say durably. No segment number goes missing: the segments
// stay a run of numbers.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "job_log_impl.h"
#include "log_reader.h"
#include "record_codec.h"
#include "wheel/jobs/log/job_log.h"
#include "wheel/logger.h"

namespace wheel::jobs {
namespace {

// Room left beyond the rewrite itself (the file system's block rounding and metadata).
constexpr std::uint64_t kRewriteSlack = 16 * 1024;

// A rewrite frees at least this share (1 / kMinGainShare) of the segment, so that one segment is
// not rewritten again and again for little.
constexpr std::uint64_t kMinGainShare = 8;

bool worth_it(std::uint64_t bytes, std::uint64_t need, std::uint64_t free) {
  return need < bytes && need + kRewriteSlack <= free && (bytes - need) * kMinGainShare >= bytes;
}

}  // namespace

SegmentInfo* JobLog::Impl::segment_info(std::uint64_t number) {
  auto it = std::lower_bound(segments.begin(), segments.end(), number,
                             [](const SegmentInfo& s, std::uint64_t n) { return s.number < n; });
  return it == segments.end() || it->number != number ? nullptr : &*it;
}

void JobLog::Impl::count_segment_live() {
  for (SegmentInfo& s : segments) s.live = 0;
  for (const auto& [id, entry] : index) {
    PutAt at;
    if (!put_at(id, entry.put, &at)) continue;
    if (SegmentInfo* s = segment_info(at.segment)) s->live += at.put_size;
  }
  fs->remove(opt.dir + "/" + kRewriteFile);  // a rewrite a crash cut short: the segment holds
}

bool JobLog::Impl::compact_full() {
  full_progress = false;
  // No index lent now: every job would look dead. Held segments: take_recovered_jobs() first.
  if (failed || compaction_stopped || (index_lent && lent == nullptr) ||
      !recovered_segments.empty() || segments.size() < 2) {
    return false;
  }
  if (segments.front().live == 0 && compact_oldest()) return full_progress = true;
  std::uint64_t free = 0;
  if (compaction_stopped || fs->free_bytes(opt.dir, &free)) return false;
  std::size_t best = segments.size();
  std::uint64_t best_gain = 0;
  for (std::size_t i = 0; i + 1 < segments.size(); ++i) {  // the head is not closed
    const SegmentInfo& s = segments[i];
    const std::uint64_t need = s.live + s.kept;
    if (worth_it(s.bytes, need, free) && s.bytes - need > best_gain) {
      best = i;
      best_gain = s.bytes - need;
    }
  }
  if (best == segments.size()) return false;
  return full_progress = rewrite_in_place(best, free);
}

bool JobLog::Impl::rewrite_in_place(std::size_t index, std::uint64_t free) {
  const std::uint64_t number = segments[index].number;
  const std::uint64_t old_bytes = segments[index].bytes;
  const bool oldest = index == 0;  // nothing older: its updates and deletes are needless
  const std::string path = segment_path(number);
  std::string data;
  if (auto ec = fs->read_range(path, 0, old_bytes, &data); ec || data.size() != old_bytes) {
    logger()->error("job log: cannot read {} for compaction ({}); compaction stopped", path,
                    ec ? ec.message() : "short read");
    compaction_stopped = true;
    return false;
  }
  struct Moved {
    std::uint64_t id;
    std::uint64_t offset;
    std::uint64_t size;
    std::uint64_t old_size;
    bool needs_counters;
  };
  std::vector<Moved> moved;
  // Ids from its start record's limit on were handed out after it began: their puts are in it
  // or later, never in an older segment.
  std::uint64_t start_limit = 0;
  std::string out;
  log::Reader reader(data);
  log::Record rec;
  StoredJob job;
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
    const auto keep = [&] { out.append(data, rec.offset, rec.size()); };
    std::uint64_t id = 0;
    PutAt at;
    LogIndex::Entry entry;
    switch (static_cast<log::RecordType>(rec.type)) {
      case log::RecordType::kSegmentStart: {  // its number, id limit and nonce, as they were
        codec::SegmentStart start;
        if (codec::decode_segment_start(rec.payload, &start)) start_limit = start.id_limit;
        keep();
        break;
      }
      case log::RecordType::kIdLimit:
        keep();
        break;
      case log::RecordType::kPut:
        if (!codec::peek_put_id(rec.payload, &id)) break;
        if (!locate(id, &at, &entry) || at.segment != number || at.offset != rec.offset ||
            !codec::decode_put(rec.payload, &job)) {
          break;  // dead, or put again since
        }
        restate(id, entry, &job);
        moved.push_back({id, out.size(), codec::put_record_size(job), at.put_size,
                         codec::put_needs_counters(job)});
        {
          const std::size_t start = log::begin_record(&out, log::RecordType::kPut);
          codec::append_put(&out, job);
          log::finish_record(&out, start);
        }
        break;
      case log::RecordType::kUpdate: {
        StoredChange change;
        if (!oldest && codec::decode_change(rec.payload, &change) && locate(change.id, &at) &&
            at.segment != number) {
          keep();  // its put, elsewhere, does not carry it (one older does not)
        }
        break;
      }
      case log::RecordType::kDelete:
        // Needed while the job's put may be in an older segment (a copy compaction left there
        // too, when a step stopped halfway).
        if (!oldest && codec::decode_u64(rec.payload, &id) && id < start_limit) keep();
        break;
      default:  // kSynced marks: only the head's matter
        break;
    }
  }
  std::uint64_t live = 0;
  for (const Moved& m : moved) live += m.size;
  SegmentInfo* seg = segment_info(number);
  seg->live = live;  // exact now (the estimate that chose it may have drifted)
  seg->kept = out.size() - live;
  if (!worth_it(old_bytes, out.size(), free)) return false;  // remembered for the next choice

  // The head first: the states the new puts carry and the deletes that let puts go are then
  // durable before the segment that relies on them.
  if (sync_inline()) return false;
  const std::string tmp = opt.dir + "/" + kRewriteFile;
  fs->remove(tmp);
  std::error_code ec;
  {
    std::unique_ptr<WritableFile> file;
    ec = fs->open_append(tmp, &file);
    if (!ec) ec = file->append(std::as_bytes(std::span(out.data(), out.size())));
    if (!ec) ec = file->sync();
  }
  if (!ec) ec = fs->rename(tmp, path);
  if (ec) {
    fs->remove(tmp);
    if (ec == std::errc::no_space_on_device) return false;  // less room than statvfs said
    logger()->error("job log: cannot rewrite {} ({}); compaction stopped", path, ec.message());
    compaction_stopped = true;
    return false;
  }
  fs->sync_dir(opt.dir);
  readers.erase(number);  // its descriptor is the old file's
  seg = segment_info(number);
  seg->bytes = out.size();
  total_bytes -= old_bytes - out.size();
  for (const Moved& m : moved) {
    live_bytes = live_bytes - m.old_size + m.size;
    note_rewritten(m.id, m.needs_counters);
    relocate(m.id, number, m.offset);
  }
  ++compacted_segments;
  rewritten_bytes += live;
  logger()->info("job log: disk full: rewrote {} in place, {} of {} bytes kept", path, out.size(),
                 old_bytes);
  return true;
}

}  // namespace wheel::jobs
