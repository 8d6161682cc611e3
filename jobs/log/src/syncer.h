// SPDX-License-Identifier: Apache-2.0
// Internal. The group-commit engine of the job log, and its writer. With a thread (the log
// thread), the owner hands each batch of records to it (hand_off) and the thread writes them,
// in order, so the owner (the server's loop) never waits in write() on a stuck disk; tasks
// (run_task: space set aside ahead) run in the same order. Without a thread the owner writes
// records itself, then tells the syncer which file they went to and the LSN they reach
// (note_written). A sync (on the thread after request(), or inline in sync_now()) takes a
// snapshot of the files written since
// the last sync and of the LSN written so far, fdatasyncs those files (and the directory when a
// segment was created), then publishes that LSN as durable. Every record written before the
// snapshot is covered, so all the changes that arrive while one fdatasync runs share the next.
// Each sync that synced something is one observation of the metrics (log_metrics.h); their
// histograms have one writer at a time (syncs are serialized by sync_mu_) and are read
// without a lock from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "wheel/jobs/log/file_system.h"
#include "wheel/jobs/log/log_metrics.h"

namespace wheel::jobs {

class Syncer {
 public:
  using Clock = std::function<std::chrono::nanoseconds()>;
  // `threaded`: start the sync thread. `wakeup` is called on it after each sync. `clock` times
  // the fdatasyncs (empty: steady_clock); it is called on the syncing thread.
  Syncer(FileSystem* fs, std::string dir, bool threaded, std::function<void()> wakeup,
         Clock clock = {});
  ~Syncer();  // stops the thread (after the sync in flight, if any)

  // Owner thread: the log thread writes `bytes` (records up to `lsn`; segment `segment` then
  // ends at byte `end`) to `file`, after everything handed off before. A write error stops
  // the log like a failed sync (failure()). REQUIRES: threaded.
  void hand_off(std::shared_ptr<WritableFile> file, std::shared_ptr<const std::string> bytes,
                std::uint64_t lsn, std::uint64_t segment, std::uint64_t end);
  // Owner thread: the log thread runs `task` after what was handed off before it (its result
  // is the task's business). REQUIRES: threaded.
  void run_task(std::function<void()> task);
  // Any thread: bytes handed off and not written yet.
  std::uint64_t backlog_bytes() const;
  // Any thread: nothing handed off, asked for or running on the log thread (always true
  // without one).
  bool idle() const;
  // Owner thread: waits until idle(): the owner may then use the head file itself. This is
  // where the owner waits for a stuck disk; the server avoids it (JobLog::changes_wait()).
  void wait_idle();
  bool threaded() const { return thread_.joinable(); }
  // Any thread: records up to this LSN returned from write() (a kill -9 keeps them), and the
  // segment and byte offset they reach.
  std::uint64_t written_lsn() const;
  void written_position(std::uint64_t* segment, std::uint64_t* end) const;

  // Owner thread (no hand-off pending): records up to `lsn` were written to `file`, segment
  // `segment`, whose bytes now end at `end`; `bytes` were appended by this write.
  void note_written(const std::shared_ptr<WritableFile>& file, std::uint64_t lsn,
                    std::uint64_t segment, std::uint64_t end, std::uint64_t bytes);
  // Owner thread: `wakeup` replaces the one given to the constructor (empty: none). Once this
  // returns, the previous one is neither running nor called again.
  void set_wakeup(std::function<void()> wakeup);
  // Owner thread: the next sync also syncs the directory.
  void note_dir_changed();
  // Owner thread: start a sync on the thread (or queue one behind the one running).
  void request();
  // Any thread: the clock's time now (the age metrics).
  std::chrono::nanoseconds now() const { return clock_(); }
  // Any thread: sync now on the calling thread; everything noted before is durable on success.
  std::error_code sync_now();

  // Any thread.
  std::uint64_t durable_lsn() const;
  // The segment and byte offset the last successful sync covered.
  void durable_position(std::uint64_t* segment, std::uint64_t* end) const;
  std::error_code failure() const;
  std::uint64_t syncs() const;
  std::uint64_t synced_records() const;
  // Any thread, without a lock: the sync latency and batch size histograms.
  LogSyncMetrics metrics() const;

 private:
  void run();
  struct Op {
    std::shared_ptr<WritableFile> file;
    std::shared_ptr<const std::string> bytes;  // null: a task
    std::function<void()> task;
    std::uint64_t lsn = 0;
    std::uint64_t segment = 0;
    std::uint64_t end = 0;
  };
  void write_op(const Op& op);
  void note_written_locked(const std::shared_ptr<WritableFile>& file, std::uint64_t lsn,
                           std::uint64_t segment, std::uint64_t end, std::uint64_t bytes);

  FileSystem* fs_;
  std::string dir_;
  std::mutex wakeup_mu_;  // held while wakeup_ runs or is replaced
  std::function<void()> wakeup_;
  Clock clock_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;  // wait_idle()
  // How far the log is: written (note_written), and covered by the last successful sync.
  struct Mark {
    std::uint64_t lsn = 0;
    std::uint64_t segment = 0;
    std::uint64_t end = 0;    // byte offset in `segment`
    std::uint64_t bytes = 0;  // appended since the start
  };
  // A field read under mu_.
  template <typename T>
  T locked(const T& field) const {
    std::lock_guard lock(mu_);
    return field;
  }

  std::vector<std::shared_ptr<WritableFile>> dirty_;  // written since the last snapshot
  bool dir_dirty_ = false;
  Mark written_;
  Mark durable_;
  std::uint64_t syncs_ = 0;
  std::uint64_t synced_records_ = 0;
  std::error_code failure_;
  bool requested_ = false;
  bool stop_ = false;
  std::vector<Op> ops_;        // handed off, not yet taken by the thread
  std::uint64_t backlog_ = 0;  // bytes of the writes handed off and not yet written
  bool busy_ = false;          // the thread is writing or syncing

  std::mutex sync_mu_;  // one sync at a time: the thread's and sync_now()'s
  // Written under sync_mu_ (one writer at a time), read from any thread.
  MetricsHistogram<kSyncSecondsBounds.size()> sync_seconds_{kSyncSecondsBounds};
  MetricsHistogram<kSyncBatchRecordsBounds.size()> batch_records_{kSyncBatchRecordsBounds, 1};
  MetricsHistogram<kSyncBatchBytesBounds.size()> batch_bytes_{kSyncBatchBytesBounds, 1};
  std::thread thread_;
};

}  // namespace wheel::jobs
