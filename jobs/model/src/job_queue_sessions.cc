// SPDX-License-Identifier: Apache-2.0
// JobQueue's sessions (open, close: a closing session's jobs are released) and tubes (made
// on first use, dropped once nothing uses, watches or holds them).
#include "wheel/jobs/model/job_queue.h"

#include <string_view>
#include <vector>

#include "job_queue_internal.h"
#include "wheel/jobs/model/tube_name.h"

namespace wheel::jobs {

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
  // The used tube may be watched too: each is looked at once (maybe_drop may free it).
  if (std::find(touched.begin(), touched.end(), session->used) == touched.end()) {
    touched.push_back(session->used);
  }
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

}  // namespace wheel::jobs
