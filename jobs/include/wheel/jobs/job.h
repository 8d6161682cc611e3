// SPDX-License-Identifier: Apache-2.0
// Job: one beanstalkd job as the JobQueue (job_queue.h) holds it: its id, tube, priority,
// delay, TTR, body (or its length, when the journal keeps it), state and counters. The queue owns
// every Job; callers see them through const pointers that stay valid until the queue's next
// mutating call.
//
// Times are milliseconds on the queue's clock (the `now` its owner passes to advance()).
//
// Threads: as the queue that owns it (one thread at a time).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <string>

#include "wheel/jobs/beanstalk_stats.h"
#include "wheel/loop_wheel.h"

namespace wheel::jobs {

using Millis = std::chrono::milliseconds;
using JobState = beanstalk::JobState;
// A client session of the queue (job_session.h); 0 is never a session.
using SessionId = std::uint64_t;

class Tube;

// A job's counters, as stats-job shows them (reserves, timeouts, releases, buries, kicks).
struct JobCounters {
  std::uint32_t reserves = 0, timeouts = 0, releases = 0, buries = 0, kicks = 0;
  friend bool operator==(const JobCounters&, const JobCounters&) = default;
};

struct Job {
  std::uint64_t id = 0;
  Tube* tube = nullptr;
  std::uint32_t priority = 0;
  Millis delay{0};  // as last put or released
  Millis ttr{0};    // at least 1 ms; an integer TTR of 0 became 1 s
  // The body, when the queue holds it (a memory-only queue); with a journal that keeps bodies
  // (JobJournal::keeps_bodies) it is null and JobQueue::body() reads it back.
  std::unique_ptr<char[]> body_data;
  std::uint32_t body_size = 0;
  JobState state = JobState::kReady;
  // kReady: it became ready when its delay ended, due at `deadline` (delivery lateness).
  bool ready_by_delay = false;
  Millis created{0};
  // kDelayed: when it becomes ready; kReserved: when its TTR runs out; otherwise unused.
  Millis deadline{0};
  // One field for two states (a job is in one at a time; 8 bytes less per job):
  union {
    Millis ready_since{0};  // kReady: when it became ready (the ready wait of queue_metrics.h)
    SessionId reserver;     // kReserved: the session holding it; read it only then
  };
  std::uint32_t reserves = 0, timeouts = 0, releases = 0, buries = 0, kicks = 0;

  // Where the queue keeps it (internal): its slot in the tube's ready or delayed heap
  // (job_heap.h), the tube's buried list position while kBuried, and its TTR timeout on the
  // queue's wheel while kReserved (a delayed job waits on its tube's one timeout, tube.h).
  std::uint32_t heap_pos = 0;
  std::list<Job*>::iterator buried_pos{};
  LoopWheel::Handle timeout;
};

}  // namespace wheel::jobs
