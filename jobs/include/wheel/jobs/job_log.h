// SPDX-License-Identifier: Apache-2.0
// JobLog: the durable half of the job queue. Every change of a job is one record appended to a
// log of segment files in a directory; open() replays the log into the live jobs; compaction
// rewrites the live records of the oldest segments into the head and drops those segments,
// while serving, so the log stays under 2x the live records' bytes plus two segments.
//
// Threads: a JobLog belongs to one owner thread (the server's loop): every method is "Owner
// thread only" unless it says otherwise. With a sync thread (the default) the fdatasyncs run
// there; the owner learns of them in poll() after the `wakeup` callback has been called.
//
// Acknowledging a change (group commit): each append returns the change's LSN (1, 2, 3, ...).
// The owner appends the changes of one loop turn, calls commit() once, and later replies to each
// change once durable_lsn() >= its LSN. Whatever the policy, commit() (and poll(), and every
// sync) first writes the records gathered since the last one to the file in one write; a
// kill -9 loses nothing written. With SyncPolicy::kAlways commit() then asks for one
// fdatasync covering every record appended before it; changes appended while that sync runs
// share the next one. With kInterval and kNever the owner replies after commit() (durable_lsn()
// is then only informative).
//
// After a crash (kill -9 or power loss), open() finds: with kAlways every change whose LSN was
// <= durable_lsn(); with kInterval every change appended more than `sync_interval_ms` before
// the crash (poll() called on time); with kNever what the OS had written back. A record torn by
// the crash is cut off (logged with file and offset), never replayed. Ids handed out by
// allocate_id() are never handed out again, whatever the policy.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "wheel/jobs/file_system.h"
#include "wheel/jobs/log_error.h"
#include "wheel/jobs/log_metrics.h"
#include "wheel/jobs/stored_job.h"

namespace wheel::jobs {

enum class SyncPolicy {
  kAlways,    // acknowledged only when on disk; concurrent changes share one fdatasync
  kInterval,  // acknowledged at once; synced at most every sync_interval_ms
  kNever,     // acknowledged at once; the OS writes back when it likes
};

struct JobLogOptions {
  std::string dir;  // created if absent (not its parents)
  SyncPolicy sync = SyncPolicy::kAlways;
  std::uint32_t sync_interval_ms = 1000;  // kInterval: 1 .. 3,600,000
  // A segment is closed and a new one started past this size: 4 KiB .. 1 GiB. Compaction works
  // one segment at a time, so this bounds the pause of one compaction step.
  std::uint64_t segment_bytes = 8u << 20;
  // Kept free in the directory's file system (a file "reserve.space") and given up when the
  // disk is full, so deletes keep working: 0 .. 1 GiB.
  std::uint64_t reserve_bytes = 1u << 20;
  // A corrupt record in the middle of the log stops open() unless this is set: then the
  // damaged stretch is skipped (logged with file and offset) and the jobs after it are kept.
  bool skip_corrupt = false;
  // False: open() leaves the bodies of the recovered jobs in the log (StoredJob::body empty,
  // body_size set) and the owner reads them back with read_body() when it needs them: a
  // restart then holds no body in memory.
  bool load_bodies = true;
  // False: fdatasync runs inside commit() on the owner thread (no thread at all).
  bool sync_thread = true;
  // Called from the sync thread after each sync (e.g. uv_async_send to wake the loop). May be
  // empty; it must not call into the JobLog.
  std::function<void()> wakeup;
  FileSystem* fs = nullptr;  // null: posix_file_system(); else not owned, must outlive the log
  // Times the fdatasyncs for sync_metrics(), on the syncing thread (monotonic nanoseconds).
  // Empty: std::chrono::steady_clock. Tests pass a clock they move by hand.
  std::function<std::chrono::nanoseconds()> sync_clock;
};

// What open() found.
struct Recovered {
  std::vector<StoredJob> jobs;  // the live jobs, by id
  std::uint64_t next_id = 1;    // the first id allocate_id() will hand out
  std::uint64_t segments = 0;
  std::uint64_t records = 0;
  std::uint64_t bytes = 0;
  std::uint64_t torn_bytes = 0;     // cut off the tail of the last segment
  std::uint64_t skipped_bytes = 0;  // corrupt stretches skipped (skip_corrupt)
};

// Live and dead bytes (beanstalkd#570 asks for them): live_bytes is what a fresh log of the
// live jobs would hold (the framed put record of each job put and not deleted, as of the last
// append); total_bytes is the size of every segment file; dead_bytes = total - live is what
// compaction can give back (deleted jobs, superseded changes, bookkeeping records), never
// negative. A put adds its record to both; a delete moves the job's put record from live to
// dead and adds the delete record to dead; compaction removes dead bytes (and rewrites live
// records, so live stays and total drops). Compaction keeps total <= 2 * live + 2 segments.
struct JobLogStats {
  std::uint64_t live_bytes = 0;   // bytes of the records a fresh log would need
  std::uint64_t total_bytes = 0;  // bytes of all segment files
  std::uint64_t dead_bytes = 0;   // total_bytes - live_bytes
  std::uint64_t segments = 0;
  std::uint64_t last_lsn = 0;
  std::uint64_t durable_lsn = 0;
  std::uint64_t syncs = 0;           // fdatasync batches completed
  std::uint64_t synced_records = 0;  // records made durable by them
  std::uint64_t compacted_segments = 0;
  std::uint64_t rewritten_bytes = 0;
  bool disk_full = false;
};

class JobLog {
 public:
  using Lsn = std::uint64_t;

  // Opens the log in options.dir (creating it), replays it into *recovered and starts a new
  // head segment. Returns null and a message naming the file and byte offset in *error when
  // the log is damaged in the middle (unless skip_corrupt) or cannot be read or written.
  // Throws std::invalid_argument for options out of range. Owner thread: the calling thread.
  static std::unique_ptr<JobLog> open(const JobLogOptions& options, Recovered* recovered,
                                      std::string* error);
  // Syncs what was appended (whatever the policy) and stops the sync thread.
  ~JobLog();
  JobLog(const JobLog&) = delete;
  JobLog& operator=(const JobLog&) = delete;

  // Hands out the next job id (never one handed out before, even before a crash). May write
  // and sync an id-limit record; fails with kDiskFull or kFailed.
  std::error_code allocate_id(std::uint64_t* id);

  // Append one change. On success *lsn is its LSN; on error nothing was appended (the caller
  // refuses the change and keeps its state). kDiskFull: put and change are refused until space
  // returns; remove keeps working from the reserve. `job.id` must come from allocate_id() and
  // `change.id`, `id` must name a live job (put and not removed).
  std::error_code put(const StoredJob& job, Lsn* lsn);
  std::error_code change(const StoredChange& change, Lsn* lsn);
  std::error_code remove(std::uint64_t id, Lsn* lsn);

  // Reads the body of live job `id` back from its put record (one positional read; the record
  // follows the job through compaction). Appended records are readable at once, synced or not.
  // Errors: the file system's (EIO, ...), or std::errc::illegal_byte_sequence for a record
  // that fails its CRC or does not hold job `id` (logged with file and offset). REQUIRES:
  // `id` is live (put and not removed). Does not stop the log.
  std::error_code read_body(std::uint64_t id, std::string* body);

  // Ends a batch of appends: writes them to the file (one write), then with kAlways starts (or
  // queues) one fdatasync for all of them.
  void commit();
  // Every change with an LSN <= this is on disk.
  Lsn durable_lsn() const;
  Lsn last_lsn() const;

  // Housekeeping, called by the owner at least by next_poll_ms() and after each wakeup:
  // collects finished syncs, starts the kInterval sync when due, runs one compaction step
  // when the log is over its bound, and leaves the disk-full state when space has returned.
  // `now_ms` is any monotonic clock in milliseconds (the log never reads a clock).
  void poll(std::uint64_t now_ms);
  // When poll() next has timed work (kInterval sync, disk-space check), in now_ms terms;
  // UINT64_MAX when none.
  std::uint64_t next_poll_ms() const;

  // Makes everything appended so far durable before returning (shutdown, tests).
  std::error_code sync_now();

  // Sizes and counters at this moment. Owner thread.
  JobLogStats stats() const;
  // The sync latency and batch size histograms (log_metrics.h). Safe from any thread while
  // the log lives: plain atomic reads, no lock, never blocks behind a running fdatasync.
  LogSyncMetrics sync_metrics() const;
  bool disk_full() const;
  // True once an I/O error stopped the log (changes refused with LogError::kFailed until a
  // restart; changes appended but not yet durable then never will be).
  bool failed() const;

  class Impl;

 private:
  explicit JobLog(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace wheel::jobs
