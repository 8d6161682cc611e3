// SPDX-License-Identifier: Apache-2.0
// TimeIndex: the on-disk time index of far-future jobs (docs/jobs.md, "Far-future jobs on disk
// (design)"). Jobs are grouped by due time into buckets (bucket = due / bucket_ms). Entries are
// 32 bytes (masked CRC32C, kind, due, id, the put record's place in the log): a put entry adds a
// job to its bucket, a gone entry (a tombstone) takes it out again. Each flush appends its entries
// to one journal file (one fdatasync however many buckets they touch); once the journal holds
// journal_entries, it is split into one append-only file per bucket (`<bucket>.tix`) and a new
// journal starts. A `checkpoint` file, replaced whole, names the journal and each bucket file's
// length and counts as of the last flush, and where a restart must replay the log from to rebuild
// what the index lacks.
//
// The ordering (why an entry never names a record that is not on disk): add() and remove() only
// stage an entry in memory with the LSN of its log record; flush(durable_lsn) writes only the
// entries whose record the log has made durable, fdatasyncs every file it wrote (and the
// directory, for a new file) and only then writes the checkpoint naming their new lengths; a split
// does the same for the bucket files before the checkpoint that names them and forgets the old
// journal. open() cuts every file back to the length its checkpoint names, so bytes a crash left
// after the last checkpoint (torn or not) are never read. The index is not on the acknowledgement
// path: the log is the truth, and its owner replays the log from Recovered::replay_from after a
// restart to stage again what the last checkpoint did not cover.
//
// Threads: one owner thread; every method blocks on the file system where it says so. The
// directory is the owner's (the job log's lock covers it): two indexes on one directory are a bug.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "wheel/jobs/log/file_system.h"

namespace wheel::jobs {

// One far job in the index.
struct TimeEntry {
  std::int64_t due_unix_ms = 0;  // when it becomes ready (wall clock, ms; >= 0)
  std::uint64_t id = 0;
  std::uint64_t log_ref = 0;  // where its put record is (the owner's meaning; stored as given)
};

struct TimeIndexOptions {
  std::string dir;                      // created if absent (not its parents)
  std::uint64_t bucket_ms = 3'600'000;  // a bucket's width: 60,000 .. 86,400,000 ms
  // The journal is split into the bucket files once it holds this many entries: 1 .. 2^26
  // (32 B each: 2^22 is 128 MiB, what a bucket read scans at most).
  std::uint64_t journal_entries = std::uint64_t{1} << 22;
  FileSystem* fs = nullptr;  // null: posix_file_system(); else must outlive the index
};

// What open() found.
struct TimeIndexRecovered {
  std::uint64_t replay_from = 0;    // the last checkpoint's flush(..., replay_from); 0: none
  std::uint64_t buckets = 0;        // buckets on disk
  std::uint64_t live = 0;           // their jobs: puts minus gones
  std::uint64_t cut_bytes = 0;      // bytes past the checkpoint cut off (a crash in a flush)
  std::uint64_t removed_files = 0;  // bucket files no checkpoint named (created by that flush)
};

struct TimeBucketInfo {
  std::uint64_t bucket = 0;
  std::uint64_t live = 0;  // puts minus gones, staged ones included
};

class TimeIndex {
 public:
  using Lsn = std::uint64_t;
  static constexpr std::size_t kEntrySize = 32;

  // Opens (creating) the index in options.dir: reads the checkpoint, cuts the journal and each
  // bucket file back to the length it names, removes the files it does not name. Returns null and
  // a message in *error (naming the file) when the checkpoint is damaged or was written with
  // another bucket_ms, when a file the checkpoint names is missing or shorter than it says (lost
  // synced data: the owner rebuilds the index from the log), or on an I/O error. Throws
  // std::invalid_argument for bucket_ms or journal_entries out of range. Blocks on the file
  // system.
  static std::unique_ptr<TimeIndex> open(const TimeIndexOptions& options,
                                         TimeIndexRecovered* recovered, std::string* error);
  ~TimeIndex();
  TimeIndex(const TimeIndex&) = delete;
  TimeIndex& operator=(const TimeIndex&) = delete;

  // The bucket a due time falls in.
  std::uint64_t bucket_of(std::int64_t due_unix_ms) const;

  // Stages a put entry for a far job whose put record has LSN `record_lsn` (written by flush()
  // once the log made that LSN durable). It counts in live() and read_bucket() at once.
  // REQUIRES: entry.due_unix_ms >= 0; `record_lsn` not below any LSN staged before (log order).
  void add(const TimeEntry& entry, Lsn record_lsn);
  // Stages a gone entry: job `id`, added with `due_unix_ms`, left the far jobs (deleted, kicked,
  // loaded) by the log record with LSN `record_lsn`. REQUIRES: it was added and not removed, and
  // the same LSN order as add().
  void remove(std::int64_t due_unix_ms, std::uint64_t id, Lsn record_lsn);

  // Appends the staged entries whose LSN <= `durable_lsn` (the log's JobLog::durable_lsn()) to
  // the journal and fdatasyncs it (and the directory when the journal was made), then replaces the
  // checkpoint with the new lengths and `replay_from` (the log place from which a restart must
  // replay to stage again what this index lacks: the owner's meaning); then splits the journal
  // when it is full (each bucket file written is fdatasynced before the next checkpoint). Entries
  // with a higher LSN stay staged. On error nothing the checkpoint names changed: the entries
  // stay staged for the next flush (the files are cut back), or, when even the cut back fails,
  // the index refuses further flushes (failed()). Blocks on the file system.
  std::error_code flush(Lsn durable_lsn, std::uint64_t replay_from);

  // Bucket `bucket`'s live jobs (its file's, the journal's and the staged entries, gones
  // applied) in due order, then by id, into *entries (replaced). An entry whose CRC fails is an
  // error (std::errc::illegal_byte_sequence, logged with file and offset), never handed out; so
  // is a read error. Blocks on the file system (one read of its file, one of the journal when it
  // holds entries of the bucket).
  std::error_code read_bucket(std::uint64_t bucket, std::vector<TimeEntry>* entries) const;

  // Forgets bucket `bucket` (its jobs were loaded into memory): its staged entries now, its file
  // once a checkpoint without it is durable (written here), so a crash never leaves the
  // checkpoint naming a file that is gone. When the journal holds entries of the bucket it is
  // split first (so none of them can come back into a later bucket of that number). On error the
  // bucket is kept. Blocks.
  std::error_code drop_bucket(std::uint64_t bucket);

  // The buckets with live or staged entries, by bucket number.
  std::vector<TimeBucketInfo> buckets() const;
  std::uint64_t live() const { return live_; }  // exact: every bucket, staged entries included
  std::uint64_t live_in(std::uint64_t bucket) const;
  std::uint64_t staged() const { return staged_.size(); }
  bool failed() const { return failed_; }

  // The path of a bucket's file, and of the journal now (tests).
  std::string bucket_path(std::uint64_t bucket) const;
  std::string journal_path() const;

 private:
  struct Bucket {
    std::uint64_t bytes = 0;  // the file's length as of the last flush (what reads read)
    std::uint64_t puts = 0;   // entries of each kind in the file and the journal
    std::uint64_t gones = 0;
    std::uint64_t journaled = 0;  // its entries in the journal
    std::uint64_t live = 0;       // puts - gones, staged ones included
  };
  struct Staged {
    TimeEntry entry;
    std::uint8_t kind = 0;
    Lsn lsn = 0;
  };

  TimeIndex(const TimeIndexOptions& options, FileSystem* fs);
  bool recover(TimeIndexRecovered* recovered, std::string* error);
  std::error_code write_checkpoint(std::uint64_t replay_from);
  // Moves the journal's entries into the bucket files and starts a new journal.
  std::error_code split();
  // Cuts the files a failed write touched back to their checkpointed lengths; false (and
  // failed_) when that fails too.
  bool cut_back(const std::vector<std::pair<std::string, std::uint64_t>>& files);
  void stage(std::uint8_t kind, const TimeEntry& entry, Lsn lsn);

  TimeIndexOptions opt_;
  FileSystem* fs_;
  std::map<std::uint64_t, Bucket> buckets_;
  std::deque<Staged> staged_;
  std::uint64_t live_ = 0;
  std::uint64_t replay_from_ = 0;
  std::uint64_t journal_number_ = 1;
  std::uint64_t journal_bytes_ = 0;  // synced and named by the checkpoint
  Lsn last_staged_lsn_ = 0;
  bool failed_ = false;
};

}  // namespace wheel::jobs
