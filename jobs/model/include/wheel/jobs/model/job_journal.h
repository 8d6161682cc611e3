// SPDX-License-Identifier: Apache-2.0
// JobJournal: the one narrow door through which every durable change of a JobQueue's jobs
// passes, so that a log (the jobs log of wheel::jobs) can record it; and RestoredJob, what such
// a log hands back at start-up.
//
// Protocol (write-ahead): the queue calls record() BEFORE it applies a change; when record()
// returns false (the log cannot take it: disk full, I/O error) the queue leaves its state as it
// was and the command is refused: OUT_OF_MEMORY when last_refusal() says kFull (no room now,
// beanstalkd's answer when it cannot store a job; the same change may succeed later),
// INTERNAL_ERROR otherwise.
// A record() that returned true need not be durable yet: the server holds the replies of the
// changes a read produced and sends them once when_durable() calls back (group commit: one
// fdatasync for everything recorded so far). A journal with sync policy `never` or `MS` may call
// back at once.
//
// Durable changes are the ones beanstalkd's binlog keeps: put, delete, release, bury, kick (and
// kick-job). Not durable, as in beanstalkd: reservations, TTR expiries and touches (after a
// restart a reserved job is ready again), a delayed job becoming ready (its due time is in its
// record), pause-tube.
//
// Threads: called on the queue's thread only; when_durable's callback must run on that thread
// too (a libuv loop: hand it over with uv_async).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "wheel/jobs/model/job.h"

namespace wheel::jobs {

enum class ChangeKind : std::uint8_t {
  kPut,      // a new job: every field below
  kDelete,   // id
  kRelease,  // id, priority, delay (0: ready now)
  kBury,     // id, priority
  kKick,     // id, priority (buried or delayed -> ready)
};

// One change. The views are valid during record() only.
struct JobChange {
  ChangeKind kind = ChangeKind::kPut;
  std::uint64_t id = 0;
  std::string_view tube;  // kPut
  std::uint32_t priority = 0;
  // kPut, kRelease: from `now`; kBury, kKick: the delay the job was last put or released with.
  Millis delay{0};
  Millis ttr{0};          // kPut
  std::string_view body;  // kPut
  Millis now{0};  // the queue's clock when the change was made (a log stamps its own wall time)
  // kRelease, kBury, kKick: the job's counters after the change (those made since the last
  // change by reserves and TTR timeouts, which are not durable, included), as beanstalkd
  // writes its whole job record with each change.
  JobCounters counters{};
  // kPut, when the journal keeps bodies (keeps_bodies()): where record() stores its reference
  // to the job's stored copy, which the queue keeps in the job (Job::journal_ref).
  std::uint64_t* put_ref = nullptr;
};

// What a journal that keeps bodies may ask of the queue it serves (JobQueue implements it and
// hands itself to JobJournal::attach): the live jobs by id, so the journal need keep nothing
// per job beyond the reference each job holds (Job::journal_ref).
class JournaledJobs {
 public:
  // The live job `id` (put and not deleted), or null; valid until the queue's next change.
  virtual const Job* journaled_job(std::uint64_t id) const = 0;
  // The journal moved job `id`'s stored copy (compaction): its reference is now `ref`.
  // REQUIRES: `id` is live.
  virtual void move_journal_ref(std::uint64_t id, std::uint64_t ref) = 0;
  // The queue's clock (the one Job's times are on).
  virtual Millis journal_now() const = 0;

 protected:
  ~JournaledJobs() = default;
};

// Why a journal refused (see last_refusal()).
enum class Refusal : std::uint8_t {
  kFailed,  // an error that space will not cure (I/O error, a stopped log): INTERNAL_ERROR
  kFull,    // no room now (disk full, a store at its memory limit): OUT_OF_MEMORY
};

// The work of a journal that runs on its own (a log: syncs finished on its thread, interval
// syncs, compaction, disk-space checks), which the journal's owner (a server's loop) runs for
// it: poll() after each batch of changes, whenever the wakeup given to set_wakeup() is called,
// and by next_poll_ms(). JobJournal::housekeeping() hands it out.
//
// Threads: the owner's thread only; the wakeup is called from another.
class JournalHousekeeping {
 public:
  // Runs what is due, then the when_durable() callbacks whose changes are durable now.
  // `now_ms`: any monotonic clock in milliseconds.
  virtual void poll(std::uint64_t now_ms) = 0;
  // When poll() has timed work next (now_ms terms); UINT64_MAX: none.
  virtual std::uint64_t next_poll_ms() const = 0;
  // From now on `wakeup` is called (from another thread, e.g. uv_async_send) when poll() has
  // work; empty: none. Once this returns the previous one is neither running nor called again.
  virtual void set_wakeup(std::function<void()> wakeup) = 0;

 protected:
  ~JournalHousekeeping() = default;
};

class JobJournal {
 public:
  virtual ~JobJournal() = default;
  // The id of the next put: `proposed` (the queue's next id) or a larger one the journal owns
  // (a log that hands out ids never reused across crashes). 0: no id can be had (the put is
  // refused). A refused put may leave the id unused; ids are never handed out twice.
  virtual std::uint64_t allocate_id(std::uint64_t proposed) { return proposed; }
  // Records `change` (see the protocol above). False: not recorded, the change must not happen.
  virtual bool record(const JobChange& change) = 0;
  // Why the last allocate_id() that returned 0 or record() that returned false refused.
  // Meaningful right after such a call only; the default says kFailed.
  virtual Refusal last_refusal() const { return Refusal::kFailed; }
  // The same refusal's reason in words, for the log line of its INTERNAL_ERROR.
  virtual std::string last_refusal_reason() const { return "the journal refused the change"; }
  // Calls `done` once every change recorded so far is durable (at once if it already is, or if
  // the journal does not sync).
  virtual void when_durable(std::function<void()> done) = 0;
  // The same for a caller with no earlier callback of its own still waiting (a connection
  // whose earlier replies were sent): if nothing was recorded since the previous call (reads,
  // refusals), `done` may run at once, ahead of other callers' callbacks that wait for a sync,
  // so reads answer while a write or sync is slow. The default: when_durable().
  virtual void when_durable_or_now(std::function<void()> done) { when_durable(std::move(done)); }
  // True while new changes should wait before they are run (a log whose disk is behind,
  // JobLog::changes_wait()): the server holds them and the connection's further input, and
  // runs them once this is false. The default: never.
  virtual bool changes_wait() const { return false; }
  // True while when_durable() calls back for changes that never will be durable (a log stopped
  // by an I/O error after they were recorded): the caller must not acknowledge them (the
  // server closes the connection instead). The default: never.
  virtual bool calling_back_lost() const { return false; }
  // True: the journal keeps the body of every job it recorded a put of (until its delete) and
  // reads it back with read_body(), so the queue holds no body in memory.
  virtual bool keeps_bodies() const { return false; }
  // The queue that uses this journal calls it with itself once constructed, and with null
  // when destroyed; a journal that keeps bodies answers its store's questions about live jobs
  // from `jobs`. The default ignores it.
  virtual void attach(JournaledJobs* jobs) { (void)jobs; }
  // The journal's own work, which its owner must run (see JournalHousekeeping), or null
  // when it has none (the default).
  virtual JournalHousekeeping* housekeeping() { return nullptr; }
  // Reads the body of live job `job` into *body, from where its journal_ref says (no lookup by
  // id). False when it cannot be read (an I/O error, a damaged record): the command that
  // needed it fails with INTERNAL_ERROR.
  virtual bool read_body(const Job& job, std::string* body) {
    (void)job;
    (void)body;
    return false;
  }
};

// A journal that keeps nothing: the queue is memory only. when_durable calls back at once.
class MemoryOnlyJournal final : public JobJournal {
 public:
  bool record(const JobChange&) override { return true; }
  void when_durable(std::function<void()> done) override { done(); }
};

// A job as a log read it back at start-up (JobQueue::restore). Reserved jobs come back ready.
struct RestoredJob {
  std::uint64_t id = 0;
  std::string tube;
  std::uint32_t priority = 0;
  JobState state = JobState::kReady;  // kReady, kDelayed or kBuried
  Millis ready_in{0};                 // kDelayed: from the queue's `now` (<= 0: ready at once)
  Millis delay{0};                    // the delay it was put or released with (stats-job)
  Millis ttr{1000};
  std::string body;               // empty when the journal keeps bodies (keeps_bodies())
  std::uint32_t body_size = 0;    // its length; what counts when the journal keeps bodies
  std::uint64_t journal_ref = 0;  // when the journal keeps bodies: Job::journal_ref
  Millis age{0};                  // how long ago it was put (stats-job's age goes on from there)
  JobCounters counters{};         // as of its last durable change
};

}  // namespace wheel::jobs
