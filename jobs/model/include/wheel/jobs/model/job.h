// SPDX-License-Identifier: Apache-2.0
// Job: one beanstalkd job as the JobQueue (job_queue.h) holds it: its id, tube, priority,
// delay, TTR, body (or its length and place, when the journal keeps it), state and counters. The
// queue owns every Job; callers see them through const pointers that stay valid until the queue's
// next mutating call.
//
// Times are milliseconds on the queue's clock (the `now` its owner passes to advance()).
//
// Threads: as the queue that owns it (one thread at a time).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <list>
#include <string>

#include "wheel/jobs/model/job_stats.h"
#include "wheel/loop_wheel.h"

namespace wheel::jobs {

// A client session of the queue (job_session.h); 0 is never a session.
using SessionId = std::uint64_t;

class Tube;

// A job's counters, as stats-job shows them (reserves, timeouts, releases, buries, kicks).
struct JobCounters {
  std::uint32_t reserves = 0, timeouts = 0, releases = 0, buries = 0, kicks = 0;
  friend bool operator==(const JobCounters&, const JobCounters&) = default;
};

// 104 bytes (a 112-byte malloc chunk): fields a job needs in one state only share their
// storage (see the unions), since 10^6 pending jobs cost 10^6 of these.
struct Job {
  Job() : ready_since{0}, heap_pos{0} {}
  ~Job() {
    if (!body_in_journal) delete[] body_data;
  }
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  std::uint64_t id = 0;
  Tube* tube = nullptr;
  std::uint32_t priority = 0;
  std::uint32_t body_size = 0;
  Millis delay{0};  // as last put or released
  Millis ttr{0};    // at least 1 ms; an integer TTR of 0 became 1 s
  // The body: the queue's own copy (a memory-only queue; owned, null when empty), or, when the
  // journal keeps bodies (QueueJournal::keeps_bodies, body_in_journal), the journal's reference
  // to the job's stored copy (its put record's place in a log): set by the put's record()
  // (JournalChange::put_ref) or restore (RestoredJob::journal_ref), moved by the journal
  // (JournaledJobs::move_journal_ref).
  union {
    char* body_data = nullptr;
    std::uint64_t journal_ref;
  };
  Millis created{0};
  // kDelayed: when it becomes ready; kReserved: when its TTR runs out; kReady with
  // ready_by_delay: when it was due (delivery lateness); otherwise unused.
  Millis deadline{0};
  // One field for three states (a job is in one at a time):
  union {
    Millis ready_since;  // kReady: when it became ready (the ready wait of queue_metrics.h)
    SessionId reserver;  // kReserved: the session holding it
    std::list<Job*>::iterator buried_pos;  // kBuried: its place in the tube's buried list
  };
  // Where the queue keeps it (internal): its slot in the tube's ready or delayed heap
  // (job_heap.h) while kReady or kDelayed, and its TTR timeout on the queue's wheel while
  // kReserved (a delayed job waits on its tube's one timeout, tube.h). Read each only in its
  // states.
  union {
    std::uint32_t heap_pos;
    LoopWheel::Handle timeout;
  };
  std::uint32_t reserves = 0, timeouts = 0, releases = 0, buries = 0, kicks = 0;
  JobState state = JobState::kReady;
  // kReady: it became ready when its delay ended, due at `deadline` (delivery lateness).
  bool ready_by_delay = false;
  bool body_in_journal = false;  // see body_data
};

static_assert(sizeof(Job) <= 104, "a Job fits a 112-byte malloc chunk");

}  // namespace wheel::jobs
