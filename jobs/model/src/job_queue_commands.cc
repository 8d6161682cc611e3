// SPDX-License-Identifier: Apache-2.0
// JobQueue: reserve and the blocked reserves, the commands on existing jobs, pause-tube, peek
// and stats.
#include <algorithm>

#include "wheel/jobs/model/job_queue.h"

namespace wheel::jobs {

// --- reserve ---

Job* JobQueue::reserved_by(SessionId session, std::uint64_t job_id) const {
  Job* job = find_job(job_id);
  if (job == nullptr || job->state != JobState::kReserved || job->reserver != session) {
    return nullptr;
  }
  return job;
}

Job* JobQueue::best_ready(const Session* session) const {
  Job* best = nullptr;
  for (Tube* tube : session->watched) {
    if (tube->ready.empty() || tube->paused(now_)) continue;
    Job* top = tube->ready.top();
    if (best == nullptr || ReadyOrder{}(top, best)) best = top;
  }
  return best;
}

bool JobQueue::deadline_soon(const Session* session) const {
  for (std::uint64_t id : session->reserved) {
    const Job* job = find_job(id);
    if (job != nullptr && now_ >= job->deadline - kSafetyMargin) return true;
  }
  return false;
}

void JobQueue::reserve_for(Session* session, Job* job) {
  if (job->state == JobState::kReady) {
    metrics_.ready_wait.observe(now_ - job->ready_since);
    if (job->ready_by_delay) metrics_.delivery_lateness.observe(now_ - job->deadline);
  }
  metrics_.count(ChangeCounter::kReserve);
  take_out(job);
  job->state = JobState::kReserved;
  job->reserver = session->id;
  job->reserves++;
  job->deadline = deadline_in(job->ttr);
  job->tube->reserved++;
  job->tube->reserves++;
  job->timeout = schedule(job->deadline, &JobQueue::job_due, job->id);
  session->reserved.insert(job->id);
}

ReserveResult JobQueue::reserve(SessionId id, std::optional<Millis> timeout) {
  Session* session = find_session(id);
  take_role(session->worker, workers_);
  // beanstalkd: a ready job first; else DEADLINE_SOON in the safety margin; else wait.
  if (Job* job = best_ready(session)) {
    reserve_for(session, job);
    return {Outcome::kOk, job};
  }
  if (deadline_soon(session)) return {Outcome::kDeadlineSoon, nullptr};
  if (timeout && timeout->count() <= 0) return {Outcome::kTimedOut, nullptr};
  start_wait(session, timeout);
  return {Outcome::kWaiting, nullptr};
}

void JobQueue::start_wait(Session* session, std::optional<Millis> timeout) {
  session->wait_seq = next_wait_seq_++;
  waiting_++;
  for (Tube* tube : session->watched) {
    tube->waiters.emplace(*session->wait_seq, session->id);
    tubes_with_waiters_.insert(tube);
  }
  // One deadline per waiter: its timeout, or the safety margin of its soonest reserved job.
  std::optional<Millis> until;
  if (timeout) until = deadline_in(*timeout);
  for (std::uint64_t job_id : session->reserved) {
    Millis soon = find_job(job_id)->deadline - kSafetyMargin;
    if (!until || soon < *until) until = soon;
  }
  session->wait_until = until;
  if (until) session->wait_timeout = schedule(*until, &JobQueue::wait_due, session->id);
}

void JobQueue::stop_wait(Session* session) {
  if (!session->wait_seq) return;
  for (Tube* tube : session->watched) {
    tube->waiters.erase({*session->wait_seq, session->id});
    if (tube->waiters.empty()) tubes_with_waiters_.erase(tube);
  }
  cancel(session->wait_timeout);
  session->wait_seq.reset();
  session->wait_until.reset();
  waiting_--;
}

void JobQueue::serve_waiters() {
  // Each round: the best ready job among unpaused tubes with waiters goes to that tube's first
  // waiter (beanstalkd's process_queue).
  for (;;) {
    Job* best = nullptr;
    for (Tube* tube : tubes_with_waiters_) {
      if (tube->ready.empty() || tube->paused(now_)) continue;
      Job* top = tube->ready.top();
      if (best == nullptr || ReadyOrder{}(top, best)) best = top;
    }
    if (best == nullptr) return;
    SessionId waiter = best->tube->waiters.begin()->second;
    Session* session = find_session(waiter);
    stop_wait(session);
    reserve_for(session, best);
    ended_.push_back({waiter, Outcome::kOk, best->id});
  }
}

void JobQueue::deliver() {
  if (delivering_) return;  // the outer call delivers what a listener's own call added
  delivering_ = true;
  for (std::size_t i = 0; i < ended_.size(); ++i) {
    Ended ended = ended_[i];
    ReserveResult result{ended.outcome, nullptr};
    if (ended.outcome == Outcome::kOk) {
      result.job = find_job(ended.job_id);
      // Gone meanwhile (the session closed): nobody to tell.
      if (result.job == nullptr || result.job->state != JobState::kReserved ||
          result.job->reserver != ended.session) {
        continue;
      }
    }
    if (listener_ != nullptr && find_session(ended.session) != nullptr) {
      listener_->on_reserve_done(ended.session, result);
    }
  }
  ended_.clear();
  delivering_ = false;
}

ReserveResult JobQueue::reserve_job(SessionId id, std::uint64_t job_id) {
  Session* session = find_session(id);
  Job* job = find_job(job_id);
  if (job == nullptr || job->state == JobState::kReserved) return {Outcome::kNotFound, nullptr};
  take_role(session->worker, workers_);
  reserve_for(session, job);
  return {Outcome::kOk, job};
}

Outcome JobQueue::unreserve(SessionId id, std::uint64_t job_id) {
  Job* job = reserved_by(id, job_id);
  if (job == nullptr) return Outcome::kNotFound;
  take_out(job);
  if (job->reserves > 0) job->reserves--;
  if (job->tube->reserves > 0) job->tube->reserves--;
  make_ready(job);
  serve_waiters();
  deliver();
  return Outcome::kOk;
}

// --- commands on one job ---

Outcome JobQueue::remove(SessionId id, std::uint64_t job_id) {
  Job* job = find_job(job_id);
  if (job == nullptr || (job->state == JobState::kReserved && job->reserver != id)) {
    return Outcome::kNotFound;
  }
  if (!journal({ChangeKind::kDelete, job_id, {}, 0, {}, {}, {}, now_})) {
    return refusal();
  }
  take_out(job);
  job->tube->cmd_delete++;
  erase_job(job);
  return Outcome::kOk;
}

Outcome JobQueue::release(SessionId id, std::uint64_t job_id, std::uint32_t priority,
                          Millis delay) {
  Job* job = reserved_by(id, job_id);
  if (job == nullptr) return Outcome::kNotFound;
  if (delay.count() < 0) delay = Millis{0};
  JobCounters after = counters_of(job);
  after.releases++;
  if (!journal({ChangeKind::kRelease, job_id, {}, priority, delay, {}, {}, now_, after})) {
    return refusal();
  }
  take_out(job);
  job->priority = priority;
  job->delay = delay;
  job->releases++;
  place(job, delay);
  return Outcome::kOk;
}

Outcome JobQueue::bury(SessionId id, std::uint64_t job_id, std::uint32_t priority) {
  Job* job = reserved_by(id, job_id);
  if (job == nullptr) return Outcome::kNotFound;
  JobCounters after = counters_of(job);
  after.buries++;
  if (!journal({ChangeKind::kBury, job_id, {}, priority, job->delay, {}, {}, now_, after})) {
    return refusal();
  }
  take_out(job);
  job->priority = priority;
  job->buries++;
  job->state = JobState::kBuried;
  job->buried_pos = job->tube->buried.insert(job->tube->buried.end(), job);
  return Outcome::kOk;
}

Outcome JobQueue::touch(SessionId id, std::uint64_t job_id) {
  Job* job = reserved_by(id, job_id);
  if (job == nullptr) return Outcome::kNotFound;
  cancel(job->timeout);
  job->deadline = deadline_in(job->ttr);
  job->timeout = schedule(job->deadline, &JobQueue::job_due, job->id);
  metrics_.count(ChangeCounter::kTouch);
  return Outcome::kOk;
}

Outcome JobQueue::kick_job(std::uint64_t job_id) {
  Job* job = find_job(job_id);
  if (job == nullptr || (job->state != JobState::kBuried && job->state != JobState::kDelayed)) {
    return Outcome::kNotFound;
  }
  JobCounters after = counters_of(job);
  after.kicks++;
  if (!journal({ChangeKind::kKick, job_id, {}, job->priority, job->delay, {}, {}, now_, after})) {
    return refusal();
  }
  take_out(job);
  job->kicks++;
  make_ready(job);
  serve_waiters();
  deliver();
  return Outcome::kOk;
}

std::uint64_t JobQueue::kick(SessionId id, std::uint64_t bound) {
  Tube* tube = find_session(id)->used;
  const bool buried = !tube->buried.empty();  // buried ones only, if any; else delayed ones
  std::uint64_t kicked = 0;
  while (kicked < bound) {
    Job* job = buried ? (tube->buried.empty() ? nullptr : tube->buried.front())
                      : (tube->delayed.empty() ? nullptr : tube->delayed.top());
    if (job == nullptr) break;
    JobCounters after = counters_of(job);
    after.kicks++;
    if (!journal(
            {ChangeKind::kKick, job->id, {}, job->priority, job->delay, {}, {}, now_, after})) {
      break;
    }
    take_out(job);
    job->kicks++;
    make_ready(job);
    kicked++;
  }
  serve_waiters();
  deliver();
  return kicked;
}

Outcome JobQueue::pause_tube(std::string_view name, Millis delay) {
  auto it = tubes_.find(name);
  if (it == tubes_.end()) return Outcome::kNotFound;
  Tube* tube = it->second.get();
  cancel(tube->pause_timeout);
  tube->cmd_pause_tube++;
  tube->pause = delay.count() > 0 ? delay : Millis{0};
  tube->pause_until = tube->pause.count() > 0 ? deadline_in(tube->pause) : now_;
  if (tube->pause.count() > 0) {
    tube->pause_timeout =
        schedule(tube->pause_until, &JobQueue::pause_due,
                 static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(tube)));
  } else {
    serve_waiters();
    deliver();
  }
  return Outcome::kOk;
}

// --- reads ---

std::optional<std::string_view> JobQueue::body(const Job& job, std::string& scratch) const {
  if (!keeps_bodies()) return std::string_view(job.body_data, job.body_size);
  if (!journal_->read_body(job, &scratch) || scratch.size() != job.body_size) {
    return std::nullopt;
  }
  return std::string_view(scratch);
}

const Job* JobQueue::peek(std::uint64_t id) const {
  return find_job(id);
}

const Job* JobQueue::peek_ready(SessionId id) const {
  const Session* s = session(id);
  return s == nullptr ? nullptr : s->used->top_ready();
}
const Job* JobQueue::peek_delayed(SessionId id) const {
  const Session* s = session(id);
  return s == nullptr ? nullptr : s->used->next_delayed();
}
const Job* JobQueue::peek_buried(SessionId id) const {
  const Session* s = session(id);
  return s == nullptr ? nullptr : s->used->first_buried();
}

std::optional<JobStats> JobQueue::job_stats(std::uint64_t id) const {
  const Job* job = find_job(id);
  if (job == nullptr) return std::nullopt;
  JobStats stats;
  stats.id = job->id;
  stats.tube = job->tube->name();
  stats.state = job->state;
  stats.priority = job->priority;
  stats.age = now_ - job->created;
  stats.delay = job->delay;
  stats.ttr = job->ttr;
  if (job->state == JobState::kReserved || job->state == JobState::kDelayed) {
    stats.time_left = std::max(Millis{0}, job->deadline - now_);
  }
  stats.reserves = job->reserves;
  stats.timeouts = job->timeouts;
  stats.releases = job->releases;
  stats.buries = job->buries;
  stats.kicks = job->kicks;
  return stats;
}

std::optional<TubeStats> JobQueue::tube_stats(std::string_view name) const {
  const Tube* tube = find_tube(name);
  if (tube == nullptr) return std::nullopt;
  TubeStats stats;
  stats.name = tube->name();
  stats.urgent = tube->urgent;
  stats.ready = tube->ready.size();
  stats.reserved = tube->reserved;
  stats.delayed = tube->delayed.size();
  stats.buried = tube->buried.size();
  stats.total_jobs = tube->total_jobs;
  stats.using_count = tube->using_count;
  stats.watching = tube->watching;
  stats.waiting = tube->waiters.size();
  stats.cmd_delete = tube->cmd_delete;
  stats.cmd_pause_tube = tube->cmd_pause_tube;
  if (tube->paused(now_)) {
    stats.pause = tube->pause;
    stats.pause_time_left = tube->pause_until - now_;
  }
  return stats;
}

QueueCounters JobQueue::counters() const {
  QueueCounters c;
  for (const auto& [name, tube] : tubes_) {
    c.urgent += tube->urgent;
    c.ready += tube->ready.size();
    c.reserved += tube->reserved;
    c.delayed += tube->delayed.size();
    c.buried += tube->buried.size();
  }
  c.job_timeouts = job_timeouts_;
  c.total_jobs = total_jobs_;
  c.tubes = tubes_.size();
  c.sessions = sessions_.size();
  c.producers = producers_;
  c.workers = workers_;
  c.waiting = waiting_;
  c.total_sessions = total_sessions_;
  c.body_bytes = body_bytes_;
  return c;
}

}  // namespace wheel::jobs
