// SPDX-License-Identifier: Apache-2.0
// JobLog: the durable half of the job queue. Every change of a job is one record appended to a
// log of segment files in a directory; open() replays the log into the live jobs; compaction
// rewrites the live records of the oldest segments into the head and drops those segments,
// while serving, so the log stays under 2x the live records' bytes plus two segments. On a full
// disk it rewrites the emptiest segments in place instead, so deletes give puts their room back.
//
// Threads: a JobLog belongs to one owner thread (the server's loop): every method is "Owner
// thread only" unless it says otherwise. With a sync thread (the default, the log thread) the
// writes of each batch and the fdatasyncs run there, in order; the owner learns of them in
// poll() after the `wakeup` callback has been called. The owner then never waits in write()
// or fdatasync: it waits for the log thread only where changes_wait() says so (and in
// sync_now(), allocate_id() when the id lease runs out, and the destructor).
//
// Acknowledging a change (group commit): each append returns the change's LSN (1, 2, 3, ...).
// The owner appends the changes of one loop turn, calls commit() once, and later replies to each
// change once durable_lsn() >= its LSN. Whatever the policy, commit() (and poll(), and every
// sync) first writes the records gathered since the last one to the file in one write (on the
// log thread); a kill -9 loses nothing written. With SyncPolicy::kAlways commit() then asks
// for one fdatasync covering every record appended before it; changes appended while that sync
// runs share the next one. With kInterval and kNever the owner replies once written_lsn() >=
// the change's LSN (durable_lsn() is then only informative).
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

#include "wheel/jobs/log/file_system.h"
#include "wheel/jobs/log/job_log_options.h"
#include "wheel/jobs/log/log_error.h"
#include "wheel/jobs/log/log_index.h"
#include "wheel/jobs/log/log_metrics.h"
#include "wheel/jobs/log/stored_job.h"

namespace wheel::jobs {

class JobLogImpl;  // internal (job_log_impl.h)

// What open() found.
struct Recovered {
  std::vector<StoredJob> jobs;  // the live jobs, by id (empty with JobLogOptions::defer_jobs)
  std::uint64_t live_jobs = 0;  // how many live jobs there are (jobs.size() unless deferred)
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
  std::uint64_t written_lsn = 0;    // JobLog::written_lsn()
  std::uint64_t backlog_bytes = 0;  // handed to the log thread, not written yet
  // Age of the oldest change not yet written (returned from write()), and not yet synced
  // (kAlways, kInterval; 0 under kNever), on the sync_clock; 0 when there is none. A stuck disk
  // shows here: an alert can fire on it.
  double oldest_unwritten_seconds = 0;
  double oldest_unsynced_seconds = 0;
};

class JobLog {
 public:
  using Lsn = std::uint64_t;

  // Opens the log in options.dir (creating it), locks the directory for as long as the log
  // lives (the file "lock", through options.fs), replays it into *recovered and starts a new
  // head segment. Returns null and a message in *error when another log (in this process or
  // another) holds the directory (naming it and the holder's pid), when anything that was
  // synced is damaged or a segment is missing (naming the file and byte offset; unless
  // skip_corrupt), or when the log cannot be read or written. Throws std::invalid_argument for
  // options out of range. Owner thread: the calling thread.
  static std::unique_ptr<JobLog> open(const JobLogOptions& options, Recovered* recovered,
                                      std::string* error);
  // With JobLogOptions::defer_jobs: calls `each` once per live job open() found, by id, as
  // Recovered::jobs would have held it (the job may be moved from), then frees the segment bytes
  // open() held for it. Returns how many; 0 when called again or without defer_jobs. Owner
  // thread, before any append.
  std::uint64_t take_recovered_jobs(const std::function<void(StoredJob&)>& each);
  // Syncs what was appended (whatever the policy) and stops the sync thread.
  ~JobLog();
  JobLog(const JobLog&) = delete;
  JobLog& operator=(const JobLog&) = delete;

  // Hands out the next job id (never one handed out before, even before a crash or a start
  // that cut or skipped records). When the id lease ran out, first replaces the id lease file
  // (waiting for its syncs); fails with kDiskFull or kFailed when that fails (the log itself
  // goes on; the next call tries again).
  std::error_code allocate_id(std::uint64_t* id);

  // Append one change. On success *lsn is its LSN; on error nothing was appended (the caller
  // refuses the change and keeps its state). kDiskFull: put and change are refused until space
  // returns; remove keeps working from the reserve. `job.id` must come from allocate_id() and
  // `change.id`, `id` must name a live job (put and not removed). put() sets *position (may
  // be null) to where the put record went: an owner that lent its index keeps it there.
  std::error_code put(const StoredJob& job, Lsn* lsn, LogPosition* position = nullptr);
  std::error_code change(const StoredChange& change, Lsn* lsn);
  std::error_code remove(std::uint64_t id, Lsn* lsn);

  // Reads the body of live job `id` back from its put record at `put` (one positional read,
  // no lookup: the owner that lent its index knows where each job's put is; put() and
  // compaction's LogIndex::placed() tell it). Appended records are readable at once, synced or
  // not. Errors: the file system's (EIO, ...), or std::errc::illegal_byte_sequence for a
  // record that fails its CRC or does not hold job `id` (logged with file and offset).
  // REQUIRES: `id` is live (put and not removed) and its put record is at `put`. Does not stop
  // the log.
  std::error_code read_body(std::uint64_t id, const PutPlace& put, std::string* body);
  // The same, finding the put record in the index (the log's own, or the lent one's find()).
  std::error_code read_body(std::uint64_t id, std::string* body);

  // From now on `index` (the owner's, log_index.h) says where each live job's put record is
  // and its state, and the log drops its own index (about 70 bytes per live job). REQUIRES:
  // before the next change, remove, read_body or poll, `index` knows every live job: those
  // open() recovered (at StoredJob::log_position) and those put since (put()'s *position).
  // A job `index` does not know is dead to compaction. Null: no index for now (compaction
  // waits; change, remove and read_body must not be called) until one is lent again.
  void lend_index(LogIndex* index);

  // Ends a batch of appends: writes them to the file (one write), then with kAlways starts (or
  // queues) one fdatasync for all of them.
  void commit();
  // Every change with an LSN <= this is on disk.
  Lsn durable_lsn() const;
  // Every change with an LSN <= this returned from write() (a kill -9 of the process keeps
  // it): what kInterval and kNever acknowledge. Without a log thread: last_lsn().
  Lsn written_lsn() const;
  // True while the next change should wait (the server holds it and the connection's further
  // input): the log thread holds over 4 MiB not yet written, or it is busy and the next change
  // would make the owner use the disk itself (a rotation near, space to set aside, an id lease
  // to sync). Appending anyway is correct but may wait for a stuck disk. Reads never wait.
  bool changes_wait() const;
  Lsn last_lsn() const;

  // Housekeeping, called by the owner at least by next_poll_ms() and after each wakeup:
  // collects finished syncs, starts the kInterval sync when due, runs one compaction step
  // when the log is over its bound, and leaves the disk-full state when space has returned.
  // `now_ms` is any monotonic clock in milliseconds (the log never reads a clock).
  void poll(std::uint64_t now_ms);
  // When poll() next has timed work (kInterval sync, disk-space check), in now_ms terms;
  // UINT64_MAX when none.
  std::uint64_t next_poll_ms() const;

  // From now on the sync thread calls `wakeup` after each sync instead of
  // JobLogOptions::wakeup (empty: nothing); the owner set up to be woken once the log is open
  // (a server's uv_async_t) gives it here. Once this returns the previous one is neither running
  // nor called again, so what it wakes may be closed. Same rules as JobLogOptions::wakeup.
  void set_wakeup(std::function<void()> wakeup);

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

  using Impl = JobLogImpl;

 private:
  explicit JobLog(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace wheel::jobs
