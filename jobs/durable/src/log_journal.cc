// SPDX-License-Identifier: Apache-2.0
#include "wheel/jobs/durable/log_journal.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "wheel/jobs/model/tube.h"

namespace wheel::jobs {

namespace {

StoredState stored_state(Millis delay) {
  return delay.count() > 0 ? StoredState::kDelayed : StoredState::kReady;
}

StoredCounters stored_counters(const JobChange& c) {
  StoredCounters out;
  out.delay_ms = static_cast<std::uint64_t>(std::max<std::int64_t>(c.delay.count(), 0));
  out.reserves = c.counters.reserves;
  out.timeouts = c.counters.timeouts;
  out.releases = c.counters.releases;
  out.buries = c.counters.buries;
  out.kicks = c.counters.kicks;
  return out;
}

}  // namespace

LogJournal::LogJournal(JobLog& log, SyncPolicy policy, WallClock wall_now_ms)
    : log_(log), policy_(policy), wall_now_ms_(std::move(wall_now_ms)) {}

std::int64_t LogJournal::wall_now() const {
  if (wall_now_ms_) return wall_now_ms_();
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::uint64_t LogJournal::allocate_id(std::uint64_t proposed) {
  std::uint64_t id = 0;
  if (refused(log_.allocate_id(&id))) return 0;
  // The queue may have been told of higher ids (restore); the log's are never below them once
  // restore_into() ran, so `proposed` only matters without a log history.
  return id < proposed ? proposed : id;
}

bool LogJournal::refused(std::error_code ec) {
  if (!ec) return false;
  // No room now (disk, descriptors): the same change may succeed later.
  last_refusal_ = ec == LogError::kDiskFull || ec == LogError::kNoDescriptors ? Refusal::kFull
                                                                              : Refusal::kFailed;
  last_reason_ = "the job log refused the change: " + ec.message();
  return true;
}

bool LogJournal::record(const JobChange& change) {
  JobLog::Lsn lsn = 0;
  const std::int64_t now = wall_now();
  switch (change.kind) {
    case ChangeKind::kPut: {
      StoredJob job;
      job.id = change.id;
      job.state = stored_state(change.delay);
      job.priority = change.priority;
      job.due_unix_ms = change.delay.count() > 0 ? now + change.delay.count() : 0;
      job.ttr_ms = static_cast<std::uint64_t>(change.ttr.count());
      job.created_unix_ms = now;
      job.tube = std::string(change.tube);
      job.body = std::string(change.body);
      job.counters = stored_counters(change);
      LogPosition position = 0;
      if (refused(log_.put(job, &lsn, &position))) return false;
      if (change.put_ref != nullptr) *change.put_ref = position;
      return true;
    }
    case ChangeKind::kRelease:
      return !refused(log_.change(
          {change.id, stored_state(change.delay), change.priority,
           change.delay.count() > 0 ? now + change.delay.count() : 0, stored_counters(change)},
          &lsn));
    case ChangeKind::kBury:
      return !refused(log_.change(
          {change.id, StoredState::kBuried, change.priority, 0, stored_counters(change)}, &lsn));
    case ChangeKind::kKick:
      return !refused(log_.change(
          {change.id, StoredState::kReady, change.priority, 0, stored_counters(change)}, &lsn));
    case ChangeKind::kDelete:
      return !refused(log_.remove(change.id, &lsn));
  }
  return false;
}

bool LogJournal::read_body(const Job& job, std::string* body) {
  return !log_.read_body(job.id, put_place(job), body);
}

void LogJournal::attach(JournaledJobs* jobs) {
  jobs_ = jobs;
  log_.lend_index(jobs == nullptr ? nullptr : this);
}

PutPlace LogJournal::put_place(const Job& job) {
  return {job.journal_ref, static_cast<std::uint32_t>(job.tube->name().size()), job.body_size};
}

bool LogJournal::find(std::uint64_t id, Entry* entry) const {
  const Job* job = jobs_ == nullptr ? nullptr : jobs_->journaled_job(id);
  if (job == nullptr || !job->body_in_journal) return false;
  entry->put = put_place(*job);
  entry->priority = job->priority;
  entry->due_unix_ms = 0;
  switch (job->state) {
    case JobState::kDelayed:
      // Its due time on the wall clock, as the queue's clock sees it now (a restart re-arms it
      // from there).
      entry->state = StoredState::kDelayed;
      entry->due_unix_ms = wall_now() + (job->deadline - jobs_->journal_now()).count();
      break;
    case JobState::kBuried:
      entry->state = StoredState::kBuried;
      break;
    case JobState::kReady:
    case JobState::kReserved:  // reservations are not durable: as before its reserve
      entry->state = StoredState::kReady;
      break;
  }
  return true;
}

void LogJournal::placed(std::uint64_t id, LogPosition position) {
  if (jobs_ != nullptr) jobs_->move_journal_ref(id, position);
}

JobLog::Lsn LogJournal::acked_lsn() const {
  return policy_ == SyncPolicy::kAlways ? log_.durable_lsn() : log_.written_lsn();
}

void LogJournal::when_durable(std::function<void()> done) {
  answer(std::move(done), false);
}

void LogJournal::when_durable_or_now(std::function<void()> done) {
  answer(std::move(done), true);
}

void LogJournal::answer(std::function<void()> done, bool may_pass) {
  const JobLog::Lsn lsn = log_.last_lsn();
  const bool recorded = lsn > last_batch_lsn_;
  last_batch_lsn_ = lsn;
  // Writes the batch's records out (hands them to the log thread) before any reply leaves,
  // whatever the policy: replies wait for written_lsn(), so a kill -9 after a reply loses none
  // of them; with kAlways also starts their sync (without a sync thread the fdatasync runs in
  // there).
  log_.commit();
  if (log_.failed()) {
    // What waits will never be durable: those callbacks go first, as lost. Then this batch: lost
    // too if its own records were not made durable (whatever the policy: they may never have
    // reached the file); answered if it recorded nothing (refusals, reads).
    run_durable();
    calling_back_lost_ = recorded && log_.durable_lsn() < lsn;
    done();
    calling_back_lost_ = false;
    return;
  }
  // In order: a callback never overtakes an earlier one still waiting, unless its caller has
  // none waiting and it recorded nothing (reads answer while a write or sync is slow).
  if ((may_pass && !recorded) || (waiting_.empty() && acked_lsn() >= lsn)) {
    done();
    return;
  }
  waiting_.emplace_back(lsn, std::move(done));
  run_durable();
}

void LogJournal::run_durable() {
  const JobLog::Lsn durable = acked_lsn();
  // Callbacks may record more (a reply resumes a client): take each out before calling it.
  while (!waiting_.empty() && waiting_.front().first <= durable) {
    std::function<void()> done = std::move(waiting_.front().second);
    waiting_.pop_front();
    done();
  }
  if (!log_.failed() || waiting_.empty()) return;
  std::deque<std::pair<JobLog::Lsn, std::function<void()>>> lost;
  lost.swap(waiting_);
  calling_back_lost_ = true;
  for (auto& [lsn, done] : lost) done();
  calling_back_lost_ = false;
}

void LogJournal::poll(std::uint64_t now_ms) {
  log_.poll(now_ms);
  run_durable();
}

}  // namespace wheel::jobs
