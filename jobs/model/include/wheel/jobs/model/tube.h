// SPDX-License-Identifier: Apache-2.0
// Tube: one named queue of jobs inside a JobQueue, as beanstalkd keeps it: a ready set ordered
// by priority (lower first) then id (so FIFO among equal priorities: ids only grow), the delayed
// jobs ordered by the time they become ready, the buried jobs in the order they were buried,
// the sessions blocked in a reserve that watch it (first come, first served), its pause and its
// counters. The JobQueue creates a tube when a session uses or watches it or a job is put or
// restored into it, and drops it when no session uses or watches it and it holds no job
// ("default" is never dropped), as beanstalkd does.
//
// Threads: as the queue that owns it.
#pragma once

#include <cstdint>
#include <list>
#include <set>
#include <string>
#include <utility>

#include "wheel/jobs/model/job.h"
#include "wheel/jobs/model/job_heap.h"
#include "wheel/jobs/model/ready_marks.h"

namespace wheel::jobs {

struct ReadyOrder {
  bool operator()(const Job* a, const Job* b) const {
    return a->priority != b->priority ? a->priority < b->priority : a->id < b->id;
  }
};
struct DelayedOrder {
  bool operator()(const Job* a, const Job* b) const {
    return a->deadline != b->deadline ? a->deadline < b->deadline : a->id < b->id;
  }
};

class Tube {
 public:
  explicit Tube(std::string name) : name_(std::move(name)) {}
  Tube(const Tube&) = delete;
  Tube& operator=(const Tube&) = delete;

  const std::string& name() const { return name_; }
  // The best ready job (lowest priority, then oldest id), or nullptr.
  const Job* top_ready() const { return ready.empty() ? nullptr : ready.top(); }
  // The delayed job that becomes ready first, or nullptr.
  const Job* next_delayed() const { return delayed.empty() ? nullptr : delayed.top(); }
  // The job buried longest ago, or nullptr.
  const Job* first_buried() const { return buried.empty() ? nullptr : buried.front(); }
  // True while a pause-tube is in force: reserves do not take its jobs.
  bool paused(Millis now) const { return pause.count() > 0 && now < pause_until; }
  // Jobs of the tube in any state.
  std::uint64_t job_count() const {
    return ready.size() + delayed.size() + buried.size() + reserved;
  }

  // Maintained by the JobQueue (internal state, read-only to others).
  JobHeap<ReadyOrder> ready;
  JobHeap<DelayedOrder> delayed;
  std::list<Job*> buried;
  // The ready jobs in the order they became ready (clock order, so the front is the one ready
  // longest), for the console's "oldest ready" age. Marks are added when a job becomes ready and
  // not removed when it leaves: JobQueue::oldest_ready() drops stale ones from the front when
  // asked, and JobQueue::make_ready() rebuilds the marks from the ready heap once they are more
  // than twice the ready jobs (+ 64): at most 2n + 64 entries of 16 bytes, n the ready jobs when
  // one last became ready.
  mutable ReadyMarks ready_marks;
  std::uint64_t reserved = 0;
  std::uint64_t urgent = 0;  // ready jobs with priority < 1024
  // Sessions blocked in a reserve that watch this tube: (wait order, session).
  std::set<std::pair<std::uint64_t, SessionId>> waiters;
  std::uint64_t using_count = 0, watching = 0;
  std::uint64_t total_jobs = 0, cmd_delete = 0, cmd_pause_tube = 0;
  std::uint64_t reserves = 0;       // reserves of its jobs (deliveries), for the web console
  Millis pause{0};                  // the last pause-tube delay; 0 once the pause ended
  Millis pause_until{0};            // when the pause ends
  LoopWheel::Handle pause_timeout;  // the end of the pause, on the queue's wheel
  // One timeout on the queue's wheel for all the delayed jobs: at the deadline of the soonest
  // (delayed.top()) or earlier. When it runs, every job due by then becomes ready and it is
  // armed again for the new soonest. A pending job costs its heap slot, no wheel node.
  LoopWheel::Handle delay_timeout;
  Millis delay_armed_for{0};           // the deadline delay_timeout was armed for (while armed)
  std::list<Tube*>::iterator created;  // its place in the queue's tubes in creation order

 private:
  std::string name_;
};

}  // namespace wheel::jobs
