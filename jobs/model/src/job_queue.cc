// SPDX-License-Identifier: Apache-2.0
// JobQueue: construction, the state changes the commands share, put/use/watch/ignore. Elsewhere:
// the wheel's deadlines (job_queue_deadlines.cc), sessions and tubes (job_queue_sessions.cc),
// the commands on existing jobs and reads (job_queue_commands.cc), restore (job_queue_restore.cc).
#include "wheel/jobs/model/job_queue.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include "job_queue_internal.h"
#include "wheel/enum_table.h"
#include "wheel/jobs/model/tube_name.h"

namespace wheel::jobs {

namespace {
// The metrics counter of each kind of journaled change.
constexpr EnumPair<ChangeKind, ChangeCounter> kChangeCounterOf[] = {
    {ChangeKind::kPut, ChangeCounter::kPut},         {ChangeKind::kDelete, ChangeCounter::kDelete},
    {ChangeKind::kRelease, ChangeCounter::kRelease}, {ChangeKind::kBury, ChangeCounter::kBury},
    {ChangeKind::kKick, ChangeCounter::kKick},
};

// The wheel's shape: 1 ms ticks, hierarchical (levels of 512 ticks: 512 ms, 262 s, 37 h, ...).
// docs/jobs.md has the measurement that chose it over the hashed layout.
LoopWheelOptions wheel_options() {
  LoopWheelOptions options;
  options.tick_duration = std::chrono::milliseconds(1);
  options.ticks_per_wheel = 512;
  options.layout = TimerLayout::kHierarchical;
  return options;
}
}  // namespace

using queue_detail::hold_body;
using queue_detail::kMaxJobs;
using queue_detail::kUrgentBelow;
using queue_detail::to_wheel;

JobQueue::JobQueue(JobQueueLimits limits, QueueJournal* journal, Millis now)
    : limits_(limits), journal_(journal), now_(now), deadlines_(wheel_options(), to_wheel(now)) {
  if (limits.max_jobs == 0 || limits.max_body_bytes == 0 || limits.max_tubes == 0) {
    throw std::invalid_argument("JobQueueLimits: every limit must be at least 1");
  }
  if (limits.max_jobs > kMaxJobs) {
    throw std::invalid_argument("JobQueueLimits: max_jobs must be at most 4,294,967,296");
  }
  tube_for(kDefaultTube);
  if (journal_ != nullptr) journal_->attach(this);
}

JobQueue::~JobQueue() {
  if (journal_ != nullptr) journal_->attach(nullptr);
}

void JobQueue::move_journal_ref(std::uint64_t id, std::uint64_t ref) {
  Job* job = find_job(id);
  if (job != nullptr && job->body_in_journal) job->journal_ref = ref;
}

Job* JobQueue::find_job(std::uint64_t id) const {
  return jobs_.find(id);
}

// --- state changes shared by the commands ---

void JobQueue::make_ready(Job* job) {
  job->state = JobState::kReady;
  job->reserver = 0;
  job->ready_since = now_;
  job->ready_by_delay = false;
  job->tube->ready.push(job);
  note_ready(job);
  if (job->priority < kUrgentBelow) job->tube->urgent++;
}

void JobQueue::note_ready(const Job* job) {
  Tube& tube = *job->tube;
  ReadyMarks& marks = tube.ready_marks;
  marks.push_back({job->ready_since, job->id});
  if (marks.size() <= 2 * tube.ready.size() + 64) return;
  // Mostly marks of jobs that left ready: rebuild from the ready heap, in ready order.
  std::vector<ReadyMark> rebuilt;
  rebuilt.reserve(tube.ready.size());
  for (std::size_t i = 0; i < tube.ready.size(); ++i) {
    const Job* ready = tube.ready.at(i);
    rebuilt.push_back({ready->ready_since, ready->id});
  }
  std::sort(rebuilt.begin(), rebuilt.end(), [](const ReadyMark& a, const ReadyMark& b) {
    return a.since != b.since ? a.since < b.since : a.id < b.id;
  });
  marks.assign(std::move(rebuilt));
}

const Job* JobQueue::oldest_ready(const Tube& tube) const {
  ReadyMarks& marks = tube.ready_marks;
  while (!marks.empty()) {
    const ReadyMark& mark = marks.front();
    const Job* job = jobs_.find(mark.id);
    // A job that left ready and came back has a later mark of its own further on.
    if (job != nullptr && job->tube == &tube && job->state == JobState::kReady &&
        job->ready_since == mark.since)
      return job;
    marks.pop_front();
  }
  return nullptr;
}

void JobQueue::make_delayed(Job* job, Millis delay) {
  job->state = JobState::kDelayed;
  job->reserver = 0;
  job->deadline = deadline_in(delay);
  job->tube->delayed.push(job);
  if (job->tube->delayed.top() == job) arm_delays(job->tube);
}

void JobQueue::take_role(bool& role, std::uint64_t& sessions) {
  if (role) return;
  role = true;
  sessions++;
}

void JobQueue::place(Job* job, Millis delay) {
  if (delay.count() > 0) {
    make_delayed(job, delay);
  } else {
    make_ready(job);
  }
  serve_waiters();
  deliver();
}

void JobQueue::take_out(Job* job) {
  Tube* tube = job->tube;
  switch (job->state) {
    case JobState::kReady:
      tube->ready.erase(job);
      if (job->priority < kUrgentBelow) tube->urgent--;
      break;
    case JobState::kDelayed:
      tube->delayed.erase(job);
      if (tube->delayed.empty()) cancel(tube->delay_timeout);  // else it runs early, re-arms
      break;
    case JobState::kBuried:
      tube->buried.erase(job->buried_pos);
      break;
    case JobState::kReserved: {
      cancel(job->timeout);
      tube->reserved--;
      Session* holder = find_session(job->reserver);
      if (holder != nullptr) holder->reserved.erase(job->id);
      job->reserver = 0;
      break;
    }
  }
}

bool JobQueue::journal(const JournalChange& change) {
  if (journal_ != nullptr && !journal_->record(change)) return false;
  // Every recorded change is applied next: count it here, once for all commands.
  metrics_.count(map_enum(kChangeCounterOf, change.kind, ChangeCounter::kPut));
  return true;
}

JobCounters JobQueue::counters_of(const Job* job) {
  return {job->reserves, job->timeouts, job->releases, job->buries, job->kicks};
}

Outcome JobQueue::refusal() const {
  return journal_ != nullptr && journal_->last_refusal() == Refusal::kFull
             ? Outcome::kOutOfMemory
             : Outcome::kInternalError;
}

void JobQueue::erase_job(Job* job) {
  Tube* tube = job->tube;
  body_bytes_ -= job->body_size;
  jobs_.erase(job->id);
  maybe_drop(tube);
}

// --- put, use, watch, ignore ---

PutResult JobQueue::put(SessionId id, std::uint32_t priority, Millis delay, Millis ttr,
                        std::string body) {
  Session* session = find_session(id);
  if (draining_) return {Outcome::kDraining, 0};
  if (jobs_.size() >= limits_.max_jobs || body.size() > limits_.max_body_bytes - body_bytes_) {
    return {Outcome::kOutOfMemory, 0};
  }
  if (ttr.count() <= 0) ttr = kMinTtr;
  if (delay.count() < 0) delay = Millis{0};
  std::uint64_t job_id = journal_ == nullptr ? next_id_ : journal_->allocate_id(next_id_);
  if (job_id == 0) return {refusal(), 0};
  if (job_id >= next_id_) next_id_ = job_id + 1;
  std::uint64_t ref = 0;
  JournalChange change{
      ChangeKind::kPut, job_id, session->used->name(), priority, delay, ttr, body, now_};
  change.put_ref = &ref;
  if (!journal(change)) return {refusal(), 0};
  auto job = std::make_unique<Job>();
  job->id = job_id;
  job->tube = session->used;
  job->priority = priority;
  job->delay = delay;
  job->ttr = ttr;
  if (keeps_bodies()) {
    job->body_size = static_cast<std::uint32_t>(body.size());
    job->body_in_journal = true;
    job->journal_ref = ref;
  } else {
    hold_body(job.get(), body);
  }
  job->created = now_;
  Job* raw = job.get();
  jobs_.insert(std::move(job));  // a fresh id: never refused
  body_bytes_ += raw->body_size;
  raw->tube->total_jobs++;
  total_jobs_++;
  take_role(session->producer, producers_);
  place(raw, delay);
  return {Outcome::kOk, job_id};
}

Outcome JobQueue::use(SessionId id, std::string_view name) {
  Session* session = find_session(id);
  Tube* tube = tube_for(name);
  if (tube == nullptr) return Outcome::kOutOfMemory;
  Tube* old = session->used;
  if (old == tube) return Outcome::kOk;
  tube->using_count++;
  old->using_count--;
  session->used = tube;
  maybe_drop(old);
  return Outcome::kOk;
}

Outcome JobQueue::watch(SessionId id, std::string_view name) {
  Session* session = find_session(id);
  for (const Tube* tube : session->watched) {
    if (tube->name() == name) return Outcome::kOk;
  }
  Tube* tube = tube_for(name);
  if (tube == nullptr) return Outcome::kOutOfMemory;
  tube->watching++;
  session->watched.push_back(tube);
  return Outcome::kOk;
}

void JobQueue::ignore(SessionId id, std::string_view name) {
  Session* session = find_session(id);
  const auto it = std::find_if(session->watched.begin(), session->watched.end(),
                               [&](const Tube* tube) { return tube->name() == name; });
  if (it == session->watched.end()) return;
  Tube* tube = *it;
  session->watched.erase(it);
  tube->watching--;
  maybe_drop(tube);
}

}  // namespace wheel::jobs
