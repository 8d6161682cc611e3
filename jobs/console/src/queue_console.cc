// SPDX-License-Identifier: Apache-2.0
#include "wheel/jobs/console/queue_console.h"

#include <algorithm>
#include <memory>
#include <queue>
#include <utility>
#include <vector>

#include "lateness_histogram.h"
#include "wheel/jobs/model/queue_metrics.h"

namespace wheel::jobs::console {
namespace {

// The first `n` jobs of `heap` in its order, best-first from the root: the heap's array has
// every parent before its children, so the next job is always among the frontier's children.
template <class Order>
std::vector<const Job*> first_of(const JobHeap<Order>& heap, std::size_t n) {
  std::vector<const Job*> out;
  if (heap.empty() || n == 0) return out;
  const auto later = [&heap](std::size_t a, std::size_t b) {
    return Order{}(heap.at(b), heap.at(a));
  };
  std::priority_queue<std::size_t, std::vector<std::size_t>, decltype(later)> frontier(later);
  frontier.push(0);
  while (!frontier.empty() && out.size() < n) {
    const std::size_t pos = frontier.top();
    frontier.pop();
    out.push_back(heap.at(pos));
    for (const std::size_t child : {2 * pos + 1, 2 * pos + 2}) {
      if (child < heap.size()) frontier.push(child);
    }
  }
  return out;
}

ConsoleStatus status_of(Outcome outcome) {
  switch (outcome) {
    case Outcome::kOk:
      return ConsoleStatus::kOk;
    case Outcome::kNotFound:
      return ConsoleStatus::kNotFound;
    case Outcome::kOutOfMemory:
    case Outcome::kDraining:
      return ConsoleStatus::kFull;
    default:
      return ConsoleStatus::kError;
  }
}

void set_outcome(ConsoleChange& answer, Outcome outcome, const JobQueue& queue) {
  answer.status = status_of(outcome);
  switch (outcome) {
    case Outcome::kOk:
      break;
    case Outcome::kNotFound:
      answer.error = "not found";
      break;
    case Outcome::kDraining:
      answer.error = "the server drains: no puts";
      break;
    case Outcome::kOutOfMemory:
      answer.error = "out of memory (a --max-* bound or a full disk)";
      break;
    default:
      answer.error = queue.refusal_reason();
      break;
  }
}

// A session of its own around a change: opened, using `tube`, closed after.
class Session {
 public:
  explicit Session(JobQueue& queue) : queue_(queue), id_(queue.open_session()) {}
  ~Session() { queue_.close_session(id_); }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  SessionId id() const { return id_; }

 private:
  JobQueue& queue_;
  SessionId id_;
};

}  // namespace

QueueConsole::QueueConsole(JobQueue& queue, QueueJournal& journal, std::string kind,
                           RunOutside run_outside, std::function<std::uint64_t()> connections)
    : queue_(queue),
      journal_(journal),
      kind_(std::move(kind)),
      run_outside_(std::move(run_outside)),
      connections_(std::move(connections)) {
  if (!run_outside_) run_outside_ = [](const std::function<void()>& change) { change(); };
}

ConsoleTube QueueConsole::figures(const Tube& tube) const {
  ConsoleTube t;
  t.name = tube.name();
  const std::optional<TubeStats> s = queue_.tube_stats(tube.name());
  if (s) {
    t.ready = s->ready;
    t.delayed = s->delayed;
    t.reserved = s->reserved;
    t.buried = s->buried;
    t.urgent = s->urgent;
    t.puts = s->total_jobs;
    t.using_count = s->using_count;
    t.watching = s->watching;
    t.waiting = s->waiting;
    t.pause_left_ms = s->pause_time_left.count();
  }
  t.paused = tube.paused(queue_.now());
  t.deliveries = tube.reserves;
  if (const Job* head = tube.top_ready())
    t.head_wait_ms = (queue_.now() - head->ready_since).count();
  if (const Job* oldest = queue_.oldest_ready(tube))
    t.oldest_ready_ms = (queue_.now() - oldest->ready_since).count();
  return t;
}

ConsoleJob QueueConsole::describe(const Job& job, std::size_t body_bytes, bool with_stats) const {
  ConsoleJob j;
  j.id = job.id;
  j.tube = job.tube->name();
  j.state = job.state;
  j.priority = job.priority;
  j.body_size = job.body_size;
  j.stats_known = with_stats;
  if (with_stats) {
    if (const std::optional<JobStats> s = queue_.job_stats(job.id)) {
      j.age_ms = s->age.count();
      j.delay_ms = s->delay.count();
      j.ttr_ms = s->ttr.count();
      j.time_left_ms = s->time_left.count();
      j.reserves = s->reserves;
      j.timeouts = s->timeouts;
      j.releases = s->releases;
      j.buries = s->buries;
      j.kicks = s->kicks;
    }
  } else if (job.state == JobState::kDelayed) {
    j.time_left_ms = std::max<std::int64_t>(0, (job.deadline - queue_.now()).count());
  }
  std::string scratch;
  if (const std::optional<std::string_view> body = queue_.body(job, scratch)) {
    j.body = std::string(body->substr(0, body_bytes));
  }
  return j;
}

void QueueConsole::overview(std::size_t max_tubes, Done<ConsoleOverview> done) {
  run_outside_([] {});  // the queue's clock brought to now: ages and waits are current
  ConsoleOverview o;
  const std::vector<std::string_view> names = queue_.tube_names();
  o.tubes_total = names.size();
  for (const std::string_view name : names) {
    const Tube* tube = queue_.find_tube(name);
    if (tube == nullptr) continue;
    if (o.tubes.size() < max_tubes) o.tubes.push_back(figures(*tube));
  }
  const QueueCounters c = queue_.counters();
  o.ready = c.ready;
  o.delayed = c.delayed;
  o.reserved = c.reserved;
  o.buried = c.buried;
  o.waiting = c.waiting;
  o.connections = connections_ ? connections_() : 0;
  done(std::move(o));
}

void QueueConsole::tube(std::string_view name, ConsoleLimits limits, Done<ConsoleTubeView> done) {
  run_outside_([] {});  // the queue's clock brought to now: ages and waits are current
  ConsoleTubeView v;
  const Tube* tube = queue_.find_tube(name);
  if (tube == nullptr) {
    v.status = ConsoleStatus::kNotFound;
    v.error = "no tube '" + std::string(name) + "'";
    return done(std::move(v));
  }
  v.tube = figures(*tube);
  const auto page = [&](const std::vector<const Job*>& jobs, std::size_t skip,
                        std::vector<ConsoleJob>& out) {
    for (std::size_t i = skip; i < jobs.size(); ++i) {
      out.push_back(describe(*jobs[i], limits.preview, false));
    }
  };
  const auto& off = limits.offset;
  page(first_of(tube->ready, off[kReadyList] + limits.jobs), off[kReadyList], v.ready);
  page(first_of(tube->delayed, off[kDelayedList] + limits.jobs), off[kDelayedList], v.delayed);
  std::size_t skipped = 0;
  for (const Job* j : tube->buried) {
    if (v.buried.size() >= limits.jobs) break;
    if (skipped++ < off[kBuriedList]) continue;
    v.buried.push_back(describe(*j, limits.preview, false));
  }
  done(std::move(v));
}

void QueueConsole::search(std::string_view name, std::string_view needle, std::size_t scan,
                          ConsoleLimits limits, Done<ConsoleSearch> done) {
  run_outside_([] {});
  ConsoleSearch s;
  const Tube* tube = queue_.find_tube(name);
  if (tube == nullptr) {
    s.status = ConsoleStatus::kNotFound;
    s.error = "no tube '" + std::string(name) + "'";
    return done(std::move(s));
  }
  std::string scratch;
  // True to go on: the scan bound and the hit bound stop it.
  const auto look = [&](const Job* job) {
    if (s.scanned >= scan || s.hits.size() >= limits.jobs) return false;
    ++s.scanned;
    const std::optional<std::string_view> body = queue_.body(*job, scratch);
    if (body && body->find(needle) != std::string_view::npos) {
      s.hits.push_back(describe(*job, limits.preview, false));
    }
    return true;
  };
  bool all = true;
  for (std::size_t i = 0; all && i < tube->ready.size(); ++i) all = look(tube->ready.at(i));
  for (std::size_t i = 0; all && i < tube->delayed.size(); ++i) all = look(tube->delayed.at(i));
  for (auto it = tube->buried.begin(); all && it != tube->buried.end(); ++it) all = look(*it);
  s.complete = all;
  done(std::move(s));
}

void QueueConsole::job(std::uint64_t id, Done<ConsoleJobView> done) {
  run_outside_([] {});  // the queue's clock brought to now: ages and waits are current
  ConsoleJobView v;
  const Job* job = queue_.peek(id);
  if (job == nullptr) {
    v.status = ConsoleStatus::kNotFound;
    v.error = "no job " + std::to_string(id);
    return done(std::move(v));
  }
  v.job = describe(*job, job->body_size, true);
  if (v.job.body.size() != job->body_size) {
    v.status = ConsoleStatus::kError;
    v.error = "the body of job " + std::to_string(id) + " could not be read back";
  }
  done(std::move(v));
}

void QueueConsole::change(Done<ConsoleChange> done, std::function<void(ConsoleChange&)> apply) {
  ConsoleChange answer;
  if (journal_.changes_wait()) {
    answer.status = ConsoleStatus::kUnavailable;
    answer.error = "the job log waits for its disk; nothing changed, try again";
    return done(std::move(answer));
  }
  run_outside_([&] { apply(answer); });
  if (answer.status != ConsoleStatus::kOk && answer.value == 0) {
    return done(std::move(answer));  // nothing recorded (a move stopped part way did record)
  }
  QueueJournal& journal = journal_;
  journal.when_durable([&journal, answer = std::move(answer), done = std::move(done)]() mutable {
    if (journal.calling_back_lost()) {
      answer.status = ConsoleStatus::kError;
      answer.error = "the job log failed before the change reached the disk";
    }
    done(std::move(answer));
  });
}

void QueueConsole::kick(std::string_view name, std::uint64_t bound, Done<ConsoleChange> done) {
  change(std::move(done), [&](ConsoleChange& a) {
    if (queue_.find_tube(name) == nullptr) {
      a.status = ConsoleStatus::kNotFound;
      a.error = "no tube '" + std::string(name) + "'";
      return;
    }
    Session session(queue_);
    if (const Outcome o = queue_.use(session.id(), name); o != Outcome::kOk) {
      return set_outcome(a, o, queue_);
    }
    a.value = queue_.kick(session.id(), bound);
  });
}

void QueueConsole::kick_job(std::uint64_t id, Done<ConsoleChange> done) {
  change(std::move(done), [&](ConsoleChange& a) {
    set_outcome(a, queue_.kick_job(id), queue_);
    if (a.status == ConsoleStatus::kOk) a.value = 1;
  });
}

void QueueConsole::remove(std::uint64_t id, Done<ConsoleChange> done) {
  change(std::move(done), [&](ConsoleChange& a) {
    const Job* job = queue_.peek(id);
    if (job != nullptr && job->state == JobState::kReserved) {
      a.status = ConsoleStatus::kNotFound;
      a.error = "job " + std::to_string(id) + " is reserved by a worker";
      return;
    }
    Session session(queue_);
    set_outcome(a, queue_.remove(session.id(), id), queue_);
  });
}

void QueueConsole::pause(std::string_view name, Millis delay, Done<ConsoleChange> done) {
  change(std::move(done),
         [&](ConsoleChange& a) { set_outcome(a, queue_.pause_tube(name, delay), queue_); });
}

void QueueConsole::put(std::string_view name, ConsolePut put, Done<ConsoleChange> done) {
  change(std::move(done), [&](ConsoleChange& a) {
    Session session(queue_);
    if (const Outcome o = queue_.use(session.id(), name); o != Outcome::kOk) {
      return set_outcome(a, o, queue_);
    }
    const PutResult r = queue_.put(session.id(), put.priority, put.delay,
                                   put.ttr.count() == 0 ? kMinTtr : put.ttr, std::move(put.body));
    set_outcome(a, r.outcome, queue_);
    a.value = r.id;
  });
}

void QueueConsole::move(std::string_view from, std::string_view to, ConsoleList list,
                        std::uint64_t count, Done<ConsoleChange> done) {
  change(std::move(done), [&](ConsoleChange& a) {
    const Tube* tube = queue_.find_tube(from);
    if (tube == nullptr) {
      a.status = ConsoleStatus::kNotFound;
      a.error = "no tube '" + std::string(from) + "'";
      return;
    }
    // The jobs, chosen first: `from` may be dropped once its last job is gone.
    std::vector<std::uint64_t> ids;
    const auto n = static_cast<std::size_t>(count);
    if (list == kReadyList) {
      for (const Job* j : first_of(tube->ready, n)) ids.push_back(j->id);
    } else if (list == kDelayedList) {
      for (const Job* j : first_of(tube->delayed, n)) ids.push_back(j->id);
    } else {
      for (auto it = tube->buried.begin(); it != tube->buried.end() && ids.size() < n; ++it) {
        ids.push_back((*it)->id);
      }
    }
    Session session(queue_);
    if (const Outcome o = queue_.use(session.id(), to); o != Outcome::kOk) {
      return set_outcome(a, o, queue_);
    }
    std::string scratch;
    for (const std::uint64_t id : ids) {
      const Job* job = queue_.peek(id);
      if (job == nullptr) continue;
      const std::optional<std::string_view> body = queue_.body(*job, scratch);
      if (!body) {
        a.status = ConsoleStatus::kError;
        a.error = "the body of job " + std::to_string(id) + " could not be read back";
        break;
      }
      const Millis delay = job->state == JobState::kDelayed
                               ? std::max(Millis(0), job->deadline - queue_.now())
                               : Millis(0);
      // The copy first, then the original: a refusal leaves the job where it was.
      const PutResult r =
          queue_.put(session.id(), job->priority, delay, job->ttr, std::string(*body));
      if (r.outcome != Outcome::kOk) {
        set_outcome(a, r.outcome, queue_);
        break;
      }
      if (const Outcome o = queue_.remove(session.id(), id); o != Outcome::kOk) {
        queue_.remove(session.id(), r.id);  // not expected: the original stays, the copy goes
        set_outcome(a, o, queue_);
        break;
      }
      ++a.value;
    }
    if (a.status != ConsoleStatus::kOk) {
      a.error = "moved " + std::to_string(a.value) + " of " + std::to_string(ids.size()) +
                ", then: " + a.error;
    }
  });
}

ConsoleHistogram QueueConsole::lateness() const {
  return lateness_histogram(queue_.metrics().delivery_lateness.read());
}

}  // namespace wheel::jobs::console
