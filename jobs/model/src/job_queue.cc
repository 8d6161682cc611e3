// SPDX-License-Identifier: Apache-2.0
// JobQueue: construction, time, sessions, tubes, put/use/watch/ignore, reads and replay. The
// commands on existing jobs are in job_queue_commands.cc.
#include "wheel/jobs/model/job_queue.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "wheel/enum_table.h"
#include "wheel/jobs/model/tube_name.h"

namespace wheel::jobs {

namespace {
constexpr std::uint32_t kUrgentBelow = 1024;  // beanstalkd's URGENT_THRESHOLD
// Job::heap_pos is 32 bits.
constexpr std::uint64_t kMaxJobs = std::uint64_t{1} << 32;

// The queue's own copy of a body (memory only): one allocation of exactly its size.
void hold_body(Job* job, std::string_view body) {
  job->body_size = static_cast<std::uint32_t>(body.size());
  if (body.empty()) return;
  job->body_data = new char[body.size()];  // ~Job deletes it
  std::memcpy(job->body_data, body.data(), body.size());
}

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

LoopWheel::Time to_wheel(Millis t) {
  constexpr std::int64_t kMaxMs = std::numeric_limits<std::int64_t>::max() / 1'000'000;
  if (t.count() >= kMaxMs) return LoopWheel::Time::max();
  if (t.count() <= -kMaxMs) return LoopWheel::Time::min();
  return std::chrono::duration_cast<LoopWheel::Time>(t);
}
}  // namespace

JobQueue::JobQueue(JobQueueLimits limits, JobJournal* journal, Millis now)
    : limits_(limits), journal_(journal), now_(now), deadlines_(wheel_options(), to_wheel(now)) {
  if (limits.max_jobs == 0 || limits.max_body_bytes == 0 || limits.max_tubes == 0 ||
      limits.max_watched_per_session == 0) {
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

// --- sessions ---

SessionId JobQueue::open_session() {
  auto session = std::make_unique<Session>();
  session->id = next_session_++;
  Tube* fallback = tube_for(kDefaultTube);
  session->used = fallback;
  fallback->using_count++;
  session->watched.push_back(fallback);
  fallback->watching++;
  SessionId id = session->id;
  sessions_.emplace(id, std::move(session));
  total_sessions_++;
  return id;
}

void JobQueue::close_session(SessionId id) {
  Session* session = find_session(id);
  if (session == nullptr) return;
  stop_wait(session);
  // Its reserved jobs go back to ready with their priority, as beanstalkd does on a hang-up.
  for (std::uint64_t job_id : session->reserved) {
    Job* job = find_job(job_id);
    cancel(job->timeout);
    job->tube->reserved--;
    metrics_.count(ChangeCounter::kHangUp);
    make_ready(job);
  }
  session->reserved.clear();
  if (session->producer) producers_--;
  if (session->worker) workers_--;
  std::vector<Tube*> touched = session->watched;
  touched.push_back(session->used);
  session->used->using_count--;
  for (Tube* tube : session->watched) tube->watching--;
  sessions_.erase(id);
  for (Tube* tube : touched) maybe_drop(tube);
  serve_waiters();
  deliver();
}

const Session* JobQueue::session(SessionId id) const {
  auto it = sessions_.find(id);
  return it == sessions_.end() ? nullptr : it->second.get();
}

Session* JobQueue::find_session(SessionId id) {
  auto it = sessions_.find(id);
  return it == sessions_.end() ? nullptr : it->second.get();
}

Job* JobQueue::find_job(std::uint64_t id) const {
  return jobs_.find(id);
}

// --- tubes ---

Tube* JobQueue::tube_for(std::string_view name) {
  auto it = tubes_.find(name);
  if (it != tubes_.end()) return it->second.get();
  if (tubes_.size() >= limits_.max_tubes) return nullptr;
  return add_tube(name);
}

Tube* JobQueue::add_tube(std::string_view name) {
  auto tube = std::make_unique<Tube>(std::string(name));
  Tube* raw = tube.get();
  tubes_.emplace(std::string(name), std::move(tube));
  raw->created = tubes_created_.insert(tubes_created_.end(), raw);
  return raw;
}

void JobQueue::maybe_drop(Tube* tube) {
  if (tube->name() == kDefaultTube || tube->using_count != 0 || tube->watching != 0 ||
      tube->job_count() != 0 || !tube->waiters.empty()) {
    return;
  }
  cancel(tube->pause_timeout);
  cancel(tube->delay_timeout);
  tubes_with_waiters_.erase(tube);
  if (tube == restore_tube_) restore_tube_ = nullptr;
  tubes_created_.erase(tube->created);
  tubes_.erase(tube->name());
}

const Tube* JobQueue::find_tube(std::string_view name) const {
  auto it = tubes_.find(name);
  return it == tubes_.end() ? nullptr : it->second.get();
}

std::vector<std::string_view> JobQueue::tube_names() const {
  std::vector<std::string_view> names;
  names.reserve(tubes_.size());
  for (const Tube* tube : tubes_created_) names.push_back(tube->name());
  return names;
}

// --- state changes shared by the commands ---

void JobQueue::make_ready(Job* job) {
  job->state = JobState::kReady;
  job->reserver = 0;
  job->ready_since = now_;
  job->ready_by_delay = false;
  job->tube->ready.push(job);
  if (job->priority < kUrgentBelow) job->tube->urgent++;
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

bool JobQueue::journal(const JobChange& change) {
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
  JobChange change{
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

namespace {

const std::string& tube_name_of(const Tube* tube) {
  return tube->name();
}

WatchResult watch_result(WatchListStep step) {
  switch (step.result) {
    case WatchListStep::Result::kOk:
      return {Outcome::kOk, step.watching};
    case WatchListStep::Result::kFull:
      return {Outcome::kOutOfMemory, step.watching};
    case WatchListStep::Result::kLast:
      return {Outcome::kNotIgnored, step.watching};
  }
  return {Outcome::kOk, step.watching};
}

}  // namespace

WatchResult JobQueue::watch(SessionId id, std::string_view name) {
  Session* session = find_session(id);
  return watch_result(watch_tube(session->watched, name, limits_.max_watched_per_session,
                                 tube_name_of, [&]() -> std::optional<Tube*> {
                                   Tube* tube = tube_for(name);
                                   if (tube == nullptr) return std::nullopt;
                                   tube->watching++;
                                   return tube;
                                 }));
}

WatchResult JobQueue::ignore(SessionId id, std::string_view name) {
  Session* session = find_session(id);
  return watch_result(ignore_tube(session->watched, name, tube_name_of, [&](Tube* tube) {
    tube->watching--;
    maybe_drop(tube);
  }));
}

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
