// SPDX-License-Identifier: Apache-2.0
// JobQueue::restore(): jobs a journal read back at start-up (RestoredJob) into a fresh queue,
// in two halves so a restart can build jobs on one thread while the queue's adds them.
#include "wheel/jobs/model/job_queue.h"

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string_view>

#include "job_queue_internal.h"
#include "wheel/jobs/model/tube_name.h"

namespace wheel::jobs {

using queue_detail::hold_body;
using queue_detail::kMaxJobs;

// --- replay ---

void JobQueue::restore(const RestoredJob& restored) {
  add_restored(build_restored(restored), restored.tube);
}

std::unique_ptr<Job> JobQueue::build_restored(const RestoredJob& restored) const {
  if (restored.id == 0) throw std::invalid_argument("restore: job id 0");
  if (!is_valid_tube_name(restored.tube)) {
    throw std::invalid_argument("restore: invalid tube name");
  }
  if (restored.state == JobState::kReserved) {
    throw std::invalid_argument("restore: a reserved job comes back ready");
  }
  if (!keeps_bodies() && restored.body.size() < restored.body_size) {
    throw std::invalid_argument("restore: the body is missing (the journal keeps none)");
  }
  auto job = std::make_unique<Job>();
  job->id = restored.id;
  job->priority = restored.priority;
  job->delay = restored.delay;
  job->ttr = restored.ttr.count() <= 0 ? kMinTtr : restored.ttr;
  if (keeps_bodies()) {
    job->body_size = restored.body_size;
    job->body_in_journal = true;
    job->journal_ref = restored.journal_ref;
  } else {
    hold_body(job.get(), restored.body);
  }
  job->created = now_ - std::max(restored.age, Millis{0});
  job->reserves = restored.counters.reserves;
  job->timeouts = restored.counters.timeouts;
  job->releases = restored.counters.releases;
  job->buries = restored.counters.buries;
  job->kicks = restored.counters.kicks;
  // Where it goes, for add_restored(): a delayed job not yet due keeps its deadline; an overdue
  // one is ready at once.
  job->state = restored.state;
  if (restored.state == JobState::kDelayed) {
    if (restored.ready_in.count() > 0) {
      job->deadline = now_ + restored.ready_in;
    } else {
      job->state = JobState::kReady;
    }
  }
  return job;
}

void JobQueue::add_restored(std::unique_ptr<Job> job, std::string_view name) {
  if (jobs_.size() >= kMaxJobs) throw std::invalid_argument("restore: over 2^32 jobs");
  Tube* tube = restore_tube_;
  if (tube == nullptr || tube->name() != name) {
    tube = tube_for(name);
    if (tube == nullptr) {
      // Replay bypasses the limits: a log written under a larger bound must load.
      tube = add_tube(name);
    }
    restore_tube_ = tube;
  }
  job->tube = tube;
  Job* raw = job.get();
  const std::uint64_t id = raw->id;
  if (!jobs_.insert(std::move(job))) {  // one probe both checks and inserts
    maybe_drop(tube);
    throw std::invalid_argument("restore: job id already present");
  }
  body_bytes_ += raw->body_size;
  tube->total_jobs++;
  if (id >= next_id_) next_id_ = id + 1;
  switch (raw->state) {
    case JobState::kDelayed: {
      const Millis deadline = raw->deadline;
      make_delayed(raw, deadline - now_);
      break;
    }
    case JobState::kBuried:
      raw->buried_pos = tube->buried.insert(tube->buried.end(), raw);
      break;
    default:
      make_ready(raw);
      break;
  }
}

void JobQueue::reserve_ids_below(std::uint64_t next) {
  if (next > next_id_) next_id_ = next;
}

}  // namespace wheel::jobs
