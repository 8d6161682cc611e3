// SPDX-License-Identifier: Apache-2.0
// LogJournal: the JobJournal of a JobQueue kept in a JobLog (job_log.h), so the queue survives
// restarts and crashes as the log's contract says. Each durable change of the queue becomes
// one log record (put, change, remove); ids come from the log's allocate_id() (never reused,
// even across a crash); when_durable() calls back once the log's durable LSN covers every
// change recorded before it (group commit with SyncPolicy::kAlways; with kInterval and kNever
// once the log thread wrote them: JobLog::written_lsn()).
// restore_into() loads what JobLog::open() recovered into a fresh queue; restore_deferred()
// does it straight from a log opened with JobLogOptions::defer_jobs, on two threads.
//
// Memory: the log keeps nothing per job. The journal lends the log an index (log_index.h)
// answered from the attached queue's jobs: each holds its put record's place
// (Job::journal_ref), and its state is the queue's. So the queue attached to the journal must
// hold every live job of the log before the log's next poll(): restore_into() or
// restore_deferred() right after the queue is made.
//
// Wall clock: the log stores due times in Unix milliseconds; the queue counts in its own
// monotonic milliseconds. The journal converts with `wall_now_ms` (the system clock unless a
// test passes its own).
//
// Threads: the owner's thread (the log's owner thread) only; restore_deferred() runs a helper
// thread of its own and joins it before it returns. After the log's `wakeup`, and by
// next_poll_ms(), the owner calls poll().
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <system_error>
#include <utility>

#include "wheel/jobs/log/job_log.h"
#include "wheel/jobs/model/job_journal.h"
#include "wheel/jobs/model/job_queue.h"

namespace wheel::jobs {

class LogJournal final : public JobJournal, public JournalHousekeeping, private LogIndex {
 public:
  using WallClock = std::function<std::int64_t()>;  // Unix milliseconds

  // `log` must outlive the journal; `policy` is the log's.
  LogJournal(JobLog& log, SyncPolicy policy, WallClock wall_now_ms = {});

  std::uint64_t allocate_id(std::uint64_t proposed) override;
  bool record(const JobChange& change) override;
  // kFull after a refusal for a full disk (LogError::kDiskFull), kFailed otherwise.
  Refusal last_refusal() const override { return last_refusal_; }
  // "the job log refused the change: " and the log's error.
  std::string last_refusal_reason() const override { return last_reason_; }
  void when_durable(std::function<void()> done) override;
  void when_durable_or_now(std::function<void()> done) override;
  bool changes_wait() const override { return log_.changes_wait(); }
  bool calling_back_lost() const override { return calling_back_lost_; }
  // Bodies stay in the log (JobLog::read_body): the queue keeps none in memory. Read from the
  // job's put record at its journal_ref: no lookup by id.
  bool keeps_bodies() const override { return true; }
  bool read_body(const Job& job, std::string* body) override;
  // Lends the log its index answered from `jobs` (null: none; the log's compaction waits).
  void attach(JournaledJobs* jobs) override;

  // Itself: its owner polls the log (JournalHousekeeping below).
  JournalHousekeeping* housekeeping() override { return this; }

  // The log's housekeeping (finished syncs, interval syncs, compaction, disk space), then the
  // callbacks of when_durable() that are durable now. `now_ms`: any monotonic clock.
  void poll(std::uint64_t now_ms) override;
  // When poll() has timed work next (now_ms terms); UINT64_MAX: none.
  std::uint64_t next_poll_ms() const override { return log_.next_poll_ms(); }
  // The log's sync thread calls `wakeup` after each sync (JobLog::set_wakeup).
  void set_wakeup(std::function<void()> wakeup) override { log_.set_wakeup(std::move(wakeup)); }
  // Callbacks still waiting for a sync.
  std::size_t waiting() const { return waiting_.size(); }
  // The log it writes to (its stats and sync metrics).
  const JobLog& log() const { return log_; }

  // Adds the recovered jobs to `queue` (REQUIRES: no session open) and moves its ids past the
  // log's. Delayed jobs keep their due time on the wall clock (due already: ready at once).
  // Takes the jobs' tubes and bodies out of recovered.jobs (left empty, its memory freed), so
  // a restart never holds a body twice. A queue whose journal keeps bodies (a LogJournal)
  // needs none: open the log with JobLogOptions::load_bodies = false and they stay on disk.
  static void restore_into(JobQueue& queue, Recovered& recovered, std::int64_t wall_now_ms);
  // The same for a log opened with JobLogOptions::defer_jobs: takes the jobs from this
  // journal's log one at a time (JobLog::take_recovered_jobs()) into `queue`, so they are never
  // all held twice. Call it once, before the queue's first command.
  void restore_deferred(JobQueue& queue, const Recovered& recovered, std::int64_t wall_now_ms);

 private:
  // Where `job`'s put record is (its journal_ref) and the sizes its length follows from.
  static PutPlace put_place(const Job& job);
  // LogIndex, from the attached queue's jobs.
  bool find(std::uint64_t id, Entry* entry) const override;
  void placed(std::uint64_t id, LogPosition position) override;

  std::int64_t wall_now() const;
  // when_durable(); `may_pass`: when_durable_or_now().
  void answer(std::function<void()> done, bool may_pass);
  // The LSN replies wait for: durable_lsn() under kAlways, written_lsn() otherwise.
  JobLog::Lsn acked_lsn() const;
  // The callbacks whose changes are durable now; once the log failed, all the others too
  // (with calling_back_lost()).
  void run_durable();
  bool refused(std::error_code ec);  // notes why; true when `ec` refused

  JobLog& log_;
  JournaledJobs* jobs_ = nullptr;
  SyncPolicy policy_;
  WallClock wall_now_ms_;
  std::deque<std::pair<JobLog::Lsn, std::function<void()>>> waiting_;
  JobLog::Lsn last_batch_lsn_ = 0;  // the LSN the previous when_durable() waited for
  bool calling_back_lost_ = false;
  Refusal last_refusal_ = Refusal::kFailed;
  std::string last_reason_;
};

}  // namespace wheel::jobs
