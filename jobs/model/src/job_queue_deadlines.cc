// SPDX-License-Identifier: Apache-2.0
// JobQueue's deadlines on its LoopWheel: a reserved job's TTR, a tube's delayed jobs (one
// timeout per tube, at its earliest), a waiting reserve's timeout and a tube's pause; advance()
// runs what is due.
#include "wheel/jobs/model/job_queue.h"

#include <chrono>
#include <cstdint>
#include <optional>

#include "job_queue_internal.h"

namespace wheel::jobs {

using queue_detail::to_wheel;

// --- time ---

void JobQueue::advance(Millis now) {
  if (now > now_) now_ = now;
  // A deadline at D ms sits 1 ns before D on the wheel, so its tick has passed exactly when
  // now_ reaches D. What a task does may schedule or cancel other deadlines (the wheel allows
  // it); commands run from tasks see now_.
  deadlines_.advance(to_wheel(now_));
  serve_waiters();
  deliver();
}

void JobQueue::set_clock_granularity(Millis granularity) {
  if (granularity.count() < 0) {
    throw std::invalid_argument("JobQueue: clock granularity must be at least 0 ms");
  }
  granularity_ = granularity;
}

std::optional<Millis> JobQueue::next_due() const {
  std::optional<LoopWheel::Time> due = deadlines_.next_due();
  if (!due) return std::nullopt;
  return std::chrono::ceil<Millis>(*due);
}

LoopWheel::Handle JobQueue::schedule(Millis when, void (JobQueue::*due)(std::uint64_t),
                                     std::uint64_t key) {
  const LoopWheel::Time at = to_wheel(when) - LoopWheel::Time(1);
  // One lambda per kind, capturing 16 bytes rather than a 16-byte member pointer as well: the
  // wheel stores the task inside its node, one per pending job.
  if (due == &JobQueue::job_due) return deadlines_.schedule_at([this, key] { job_due(key); }, at);
  if (due == &JobQueue::wait_due) return deadlines_.schedule_at([this, key] { wait_due(key); }, at);
  if (due == &JobQueue::delays_due) {
    return deadlines_.schedule_at([this, key] { delays_due(key); }, at);
  }
  return deadlines_.schedule_at([this, key] { pause_due(key); }, at);
}

void JobQueue::cancel(LoopWheel::Handle& handle) {
  if (handle) deadlines_.cancel(handle);
  handle.reset();
}

void JobQueue::job_due(std::uint64_t job_id) {
  Job* job = find_job(job_id);
  // Only a reserved job's timeout runs (take_out() cancels it): `timeout` is read then only.
  if (job == nullptr || job->state != JobState::kReserved) return;
  job->timeout.reset();
  // TTR ran out: back to ready, as beanstalkd (not journalled: reservations are not).
  Session* holder = find_session(job->reserver);
  if (holder != nullptr) holder->reserved.erase(job->id);
  job->tube->reserved--;
  job->timeouts++;
  job_timeouts_++;
  metrics_.count(ChangeCounter::kTimeout);
  make_ready(job);
}

void JobQueue::delays_due(std::uint64_t tube_address) {
  Tube* tube = reinterpret_cast<Tube*>(static_cast<std::uintptr_t>(tube_address));
  tube->delay_timeout.reset();
  // Every delayed job of the tube due by now, soonest first.
  while (!tube->delayed.empty() && tube->delayed.top()->deadline <= now_) {
    Job* job = tube->delayed.top();
    tube->delayed.erase(job);
    metrics_.delay_lateness.observe(now_ - job->deadline);
    metrics_.count(ChangeCounter::kDelayEnded);
    make_ready(job);
    job->ready_by_delay = true;  // `deadline` keeps the due time while it is ready
  }
  arm_delays(tube);
}

void JobQueue::arm_delays(Tube* tube) {
  if (tube->delayed.empty()) {
    cancel(tube->delay_timeout);
    return;
  }
  const Millis soonest = tube->delayed.top()->deadline;
  // Armed for the soonest or earlier (a job taken out since): it runs in time and re-arms.
  if (tube->delay_timeout && tube->delay_armed_for <= soonest) return;
  cancel(tube->delay_timeout);
  tube->delay_armed_for = soonest;
  tube->delay_timeout =
      schedule(soonest, &JobQueue::delays_due,
               static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(tube)));
}

void JobQueue::wait_due(std::uint64_t session_id) {
  Session* session = find_session(session_id);
  if (session == nullptr || !session->wait_seq) return;
  session->wait_timeout.reset();
  Outcome outcome = deadline_soon(session) ? Outcome::kDeadlineSoon : Outcome::kTimedOut;
  stop_wait(session);
  ended_.push_back({session->id, outcome, 0});
}

void JobQueue::pause_due(std::uint64_t tube_address) {
  Tube* tube = reinterpret_cast<Tube*>(static_cast<std::uintptr_t>(tube_address));
  tube->pause_timeout.reset();
  tube->pause = Millis{0};
  maybe_drop(tube);
}

}  // namespace wheel::jobs
