// SPDX-License-Identifier: Apache-2.0
// Internal. The state behind JobLog, shared by job_log.cc (appends, syncs, disk full),
// job_log_recovery.cc (open and replay), job_log_dir.cc (the directory's lock and id lease)
// and job_log_compaction.cc.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "log_format.h"
#include "syncer.h"
#include "wheel/jobs/log/file_system.h"
#include "wheel/jobs/log/job_log_options.h"
#include "wheel/jobs/log/log_index.h"
#include "wheel/jobs/log/stored_job.h"

namespace wheel::jobs {

// A live job's put record (its LogIndex::Entry's PutPlace) in segment terms: where it is and
// its share of live bytes (its framed size, or more by the counters it will carry once
// rewritten: JobLog::Impl::counters says which).
struct PutAt {
  std::uint64_t segment = 0;
  std::uint64_t offset = 0;
  std::uint64_t put_size = 0;
};

struct SegmentInfo {
  std::uint64_t number = 0;
  std::uint64_t bytes = 0;
  LogPosition base = 0;  // the LogPosition of its byte 0 (the earlier segments' bytes)
  // The live jobs' put records in it (their share of live_bytes): what compacting it must copy.
  std::uint64_t live = 0;
  // What else a rewrite in place keeps (its start record, the updates and deletes of jobs put
  // in older segments), as found by the last such rewrite or attempt; 0 until then.
  std::uint64_t kept = 0;
};

// Ids the id lease file covers ahead of the next id when it is written (when the ids it
// covered ran out): one write of the file (two fsyncs) per this many ids.
inline constexpr std::uint64_t kIdLease = 65536;
inline constexpr const char* kReserveFile = "reserve.space";
// A segment being rewritten in place on a full disk (job_log_space.cc), before its rename.
inline constexpr const char* kRewriteFile = "rewrite.tmp";
// Held (FileSystem::lock_file) while a log is open: one log per directory.
inline constexpr const char* kLockFile = "lock";
// The id lease: one id-limit record, replaced whole (written beside it, synced, renamed).
inline constexpr const char* kIdLeaseFile = "id.lease";
// Records up to this size are gathered for one write per batch; the batch is written once it
// reaches it. Space is set aside in steps of kReserveStep.
inline constexpr std::size_t kMaxPending = 256 * 1024;
inline constexpr std::uint64_t kReserveStep = 1024 * 1024;
// With a log thread: once this many bytes are handed to it and not written, changes wait
// (JobLog::changes_wait()) instead of memory growing behind a stuck disk.
inline constexpr std::uint64_t kMaxBacklog = 4 * 1024 * 1024;

// Two descriptors held open (on /dev/null) and given up when the process runs out of them, so
// a rotation can still open its new segment and, for its sync, the directory (net/'s acceptor
// keeps one for accept() the same way). Owner thread.
class SpareDescriptor {
 public:
  SpareDescriptor();
  ~SpareDescriptor();
  SpareDescriptor(const SpareDescriptor&) = delete;
  SpareDescriptor& operator=(const SpareDescriptor&) = delete;
  bool release();  // closes them; false when none was held
  void take();     // opens them again (may fail: tried again at the next release())

 private:
  int fds_[2] = {-1, -1};
};

// The state behind JobLog (JobLog::Impl).
class JobLogImpl {
 public:
  using Lsn = std::uint64_t;  // JobLog::Lsn (job_log.cc checks they match)

  JobLogImpl(const JobLogOptions& options, FileSystem* fs);

  std::string segment_path(std::uint64_t number) const;
  static bool parse_segment_name(std::string_view name, std::uint64_t* number);

  // Frames and writes one record to the head (rotating first when it is full). On success
  // sets *lsn and where it went. `may_use_reserve`: allowed while the disk is full (deletes).
  // Records are gathered in `pending` and written by write_out() (one write per batch) when
  // the file can set space aside (WritableFile::reserve); else each is written at once.
  std::error_code append(log::RecordType type, std::string_view payload, bool may_use_reserve,
                         Lsn* lsn, std::uint64_t* segment, std::uint64_t* offset);
  // The same for a put record, encoded straight into `framed`.
  std::error_code append_put(const StoredJob& job, Lsn* lsn, std::uint64_t* segment,
                             std::uint64_t* offset);
  // Appends the record in `framed`.
  std::error_code append_framed(log::RecordType type, bool may_use_reserve, Lsn* lsn,
                                std::uint64_t* segment, std::uint64_t* offset);
  std::error_code write_direct(const std::string& rec, bool may_use_reserve);
  // Sets aside the head's space up to byte `end` (and some ahead).
  std::error_code reserve_space(std::uint64_t end, bool may_use_reserve);
  // Writes the gathered records to the head (with a log thread: hands them to it) and tells
  // the syncer. Called before every sync, rotation and reply (JobLog::commit()); an error
  // fails the log.
  std::error_code write_out();
  // With a log thread: the owner is about to use the head file itself (rotation, setting space
  // aside, a direct write): waits for the thread to finish what it was handed, and takes the
  // space it set aside ahead.
  void own_head();
  // With a log thread: asks it to set the next step of the head's space aside while half a
  // step is left, so the owner seldom has to (reserve_space()).
  void reserve_ahead();
  // Whether the owner would have to use the head file (or wait for a sync) to append the
  // next change of up to kMaxPending bytes while the log thread is busy (changes_wait()).
  bool next_change_needs_disk() const;
  // Notes that changes up to `lsn` were just appended (the age metrics).
  void note_appended(Lsn lsn);
  // Drops the handed-off batches the thread has written.
  void prune_handed_off();
  // After a sync: appends a kSynced record naming how far the head is synced (it rides with
  // the next batch; it is not a change and needs no sync of its own).
  void mark_synced();
  std::error_code sync_inline();  // sync_now() + mark_synced(); a failure fails the log
  // Starts segment `number` (its start record, synced, directory synced) as the head.
  std::error_code start_segment(std::uint64_t number);
  std::error_code rotate();
  // The head is full: rotates, or refuses with kNoDescriptors while descriptors are short
  // (retried with backoff, logged at most every 10 s).
  std::error_code rotate_for_append();
  void enter_disk_full();
  void check_space(std::uint64_t now_ms);
  std::error_code create_reserve();
  void note_failure(const char* what, std::error_code ec);

  // The directory (job_log_dir.cc). Locks it for this log (dir_lock); false and *error when
  // another log holds it or the lock cannot be taken.
  bool lock_dir(std::string* error);
  // The id lease file's limit (0: no file, a directory of an older version); false and
  // *error when it cannot be read or is damaged (with skip_corrupt: logged, 0).
  bool read_id_lease(std::uint64_t* limit, std::string* error);
  // Replaces the id lease file with one saying `limit`, durably (written beside it, synced,
  // renamed, directory synced); on error the old file still holds.
  std::error_code write_id_lease(std::uint64_t limit);
  // Makes sure next_id is below a durable lease (writing the file when the lease ran out).
  std::error_code ensure_id_lease();

  // Positional readers of the segments bodies were read from (job_log_read.cc); a segment's
  // is dropped when compaction removes it.
  std::unordered_map<std::uint64_t, std::unique_ptr<RandomAccessFile>> readers;
  std::error_code read_body(std::uint64_t id, const PutPlace& put, std::string* body);

  // Compaction (job_log_compaction.cc).
  bool over_bound(bool hard) const;
  void compact(std::uint64_t max_steps);
  bool compact_oldest();
  // Sets `job` (decoded from live job `id`'s put, `entry` from locate()) to the state and
  // counters a rewritten put carries; after the rewrite, note_rewritten() drops what the new put
  // makes needless (`needs_counters`: codec::put_needs_counters of the new put). Shared by
  // both kinds of compaction.
  void restate(std::uint64_t id, const LogIndex::Entry& entry, StoredJob* job) const;
  void note_rewritten(std::uint64_t id, bool needs_counters);
  // Compaction on a full disk (job_log_space.cc): one step that gives space back, if one fits
  // in the free space; true when it gave some.
  bool compact_full();
  bool rewrite_in_place(std::size_t index, std::uint64_t free);
  // After open()'s replay: each segment's live bytes from the index; removes a rewrite that a
  // crash left unfinished.
  void count_segment_live();
  // The segment numbered `number`, or null.
  SegmentInfo* segment_info(std::uint64_t number);

  JobLogOptions opt;
  FileSystem* fs;
  // The directory's lock (kLockFile), first so that it is let go last, after the sync thread
  // stopped and the files closed.
  std::unique_ptr<FileObject> dir_lock;
  std::deque<SegmentInfo> segments;  // oldest first; back() is the head
  std::shared_ptr<WritableFile> head;
  std::string framed;   // the record being appended (reused: no allocation)
  std::string pending;  // records appended to the head but not yet written
  // Batches handed to the log thread and maybe not written yet: read_body() reads them here.
  struct HandedOff {
    std::uint64_t segment = 0;
    std::uint64_t offset = 0;
    std::shared_ptr<const std::string> bytes;
  };
  std::deque<HandedOff> handed_off;
  // Space the log thread set aside ahead (reserve_ahead()): up to this byte of the head, or
  // failed (the owner then sets it aside itself, with the disk-full rules).
  std::atomic<std::uint64_t> ahead_end{0};
  std::atomic<bool> ahead_busy{false};
  std::atomic<bool> ahead_failed{false};
  // When the changes appended since the oldest not yet written (synced) one were appended,
  // by LSN: the age metrics (JobLog::oldest_unwritten()).
  std::deque<std::pair<Lsn, std::chrono::nanoseconds>> appended_at;
  Lsn pending_lsn = 0;             // the LSN the pending records reach
  std::uint64_t reserved_end = 0;  // the head's space is set aside up to this byte
  bool batch_writes = true;        // false once the file could not set space aside
  std::uint64_t head_nonce = 0;
  std::uint64_t marked_end = 0;  // the head's last kSynced offset
  // Where each live job's put is and its state now: this map (recovery fills it), until the
  // owner lends its own index (JobLog::lend_index); then `lent` answers and the map is empty.
  std::unordered_map<std::uint64_t, LogIndex::Entry> index;
  LogIndex* lent = nullptr;
  bool index_lent = false;  // lend_index() was called (`lent` may be null again)
  // Live job `id`'s put record from whichever index holds it (and its entry, when `entry` is
  // not null); false when it is not live (or no index is lent now).
  bool locate(std::uint64_t id, PutAt* at, LogIndex::Entry* entry = nullptr) const;
  // Job `id`'s put record at `put` in segment terms; false when `put` is in no segment (yet:
  // during recovery the segment being replayed is not in `segments`).
  bool put_at(std::uint64_t id, const PutPlace& put, PutAt* at) const;
  // Job `id`'s share of live bytes (PutAt::put_size).
  std::uint64_t put_size(std::uint64_t id, const PutPlace& put) const;
  // Compaction rewrote live job `id`'s put at (`segment`, `offset`).
  void relocate(std::uint64_t id, std::uint64_t segment, std::uint64_t offset);
  // The position of byte `offset` of segment `number` (REQUIRES: a segment of the log), and
  // back (false when `position` is in no segment of the log).
  LogPosition position_of(std::uint64_t number, std::uint64_t offset) const;
  bool segment_at(LogPosition position, std::uint64_t* number, std::uint64_t* offset) const;
  LogPosition next_base() const {
    return segments.empty() ? 0 : segments.back().base + segments.back().bytes;
  }
  // The counters of the live jobs that changed since their put (the others' are a new job's):
  // most pending jobs never change, so they cost nothing here.
  std::unordered_map<std::uint64_t, StoredCounters> counters;
  // Jobs changed since their put by a version-1 update record (which carries no counters, so
  // `counters` does not show the change): every other change sets counters.
  std::unordered_set<std::uint64_t> changed_by_v1;
  // Whether job `id` changed since its put record (compaction must then take its state from
  // the index; else the put's own holds).
  bool changed_since_put(std::uint64_t id) const {
    return counters.contains(id) || changed_by_v1.contains(id);
  }
  // Recovery (job_log_recovery.cc): the replayed segments' bytes, held until the live jobs are
  // decoded from their latest puts (at the end of open(), or by take_recovered_jobs()).
  std::unordered_map<std::uint64_t, std::unique_ptr<FileContents>> recovered_segments;
  bool load_recovered_bodies = false;
  // Records `c` as job `id`'s counters; its put grows by them the first time (live bytes).
  void set_counters(std::uint64_t id, const StoredCounters& c);
  std::uint64_t live_bytes = 0;
  std::uint64_t total_bytes = 0;
  std::uint64_t next_id = 1;
  std::uint64_t id_limit = 1;  // the id lease file says ids below this may have been handed out
  bool lease_failing = false;  // the last write of the lease file failed (logged once)
  Lsn last_lsn = 0;
  std::unique_ptr<Syncer> syncer;
  bool disk_full = false;
  bool failed = false;
  bool compaction_stopped = false;
  std::uint64_t last_interval_sync_ms = 0;
  bool interval_started = false;
  std::uint64_t next_space_check_ms = 0;
  // Out of descriptors at a rotation: changes are refused until the retry at this time
  // (now_ms, the last poll's clock) succeeds; the delay doubles up to a second.
  SpareDescriptor spare;
  bool short_of_descriptors = false;
  std::uint64_t now_ms = 0;
  std::uint64_t descriptor_retry_ms = 0;
  std::uint64_t descriptor_backoff_ms = 0;
  std::uint64_t descriptor_logged_ms = 0;
  std::uint64_t refused_for_descriptors = 0;
  std::uint64_t compacted_segments = 0;
  std::uint64_t rewritten_bytes = 0;
  bool full_progress = false;  // the last step on a full disk gave space back: poll again soon
};

}  // namespace wheel::jobs
