// SPDX-License-Identifier: Apache-2.0
// DurableJournal::restore_into() and restore_deferred(): the recovered jobs into a fresh queue.
// restore_deferred() runs on two threads: a helper takes the jobs from the log, decodes them
// and builds each Job (JobQueue::build_restored), a chunk at a time, while the calling thread
// adds the chunks to the queue (JobQueue::add_restored: the id table, the heaps). A restart's
// profile had the building (allocation, page faults) and the adding each near half of it.
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "wheel/jobs/durable/durable_journal.h"

namespace wheel::jobs {
namespace {

// What a stored job becomes in the queue, in `job` (reused from job to job). The body moves:
// a restart never holds a body twice. The tube is copied only when it differs from the
// previous job's (most neighbours share one).
void to_restored(PutRecord& stored, std::int64_t wall_now_ms, RestoredJob& job) {
  job.id = stored.id;
  if (job.tube != stored.tube) job.tube = stored.tube;
  job.priority = stored.priority;
  job.ttr = Millis(static_cast<std::int64_t>(stored.ttr_ms));
  if (!stored.body.empty() || !job.body.empty()) job.body = std::move(stored.body);
  job.body_size = stored.body_size;
  job.journal_ref = stored.log_position;
  // As beanstalkd after a binlog replay: age goes on from the put (wall clock), the delay is
  // the last put or release's, the counters those of the last durable change.
  job.age = Millis(std::max<std::int64_t>(wall_now_ms - stored.created_unix_ms, 0));
  job.delay = Millis(static_cast<std::int64_t>(stored.counters.delay_ms));
  job.counters = {stored.counters.reserves, stored.counters.timeouts, stored.counters.releases,
                  stored.counters.buries, stored.counters.kicks};
  job.ready_in = Millis(0);
  switch (stored.state) {
    case StoredState::kReady:
      job.state = JobState::kReady;
      break;
    case StoredState::kBuried:
      job.state = JobState::kBuried;
      break;
    case StoredState::kDelayed:
      job.state = JobState::kDelayed;
      job.ready_in = Millis(stored.due_unix_ms - wall_now_ms);
      break;
  }
}

// Jobs built by the helper, in log order; tubes[k] = (first index, name) where the tube changes.
struct Chunk {
  std::vector<std::unique_ptr<Job>> jobs;
  std::vector<std::pair<std::size_t, std::string>> tubes;
};

constexpr std::size_t kChunkJobs = 4096;
constexpr std::size_t kMaxChunksAhead = 8;  // bounds what the helper builds ahead

// The helper's chunks to the calling thread, bounded; either side may stop the other.
class Handoff {
 public:
  // Helper: false when the taker stopped (the helper then stops too).
  bool put(Chunk chunk) {
    std::unique_lock lock(mu_);
    room_.wait(lock, [&] { return chunks_.size() < kMaxChunksAhead || stopped_; });
    if (stopped_) return false;
    chunks_.push_back(std::move(chunk));
    filled_.notify_one();
    return true;
  }
  // Helper: no more chunks; `error` if it failed.
  void finish(std::exception_ptr error) {
    std::lock_guard lock(mu_);
    finished_ = true;
    error_ = std::move(error);
    filled_.notify_one();
  }
  // Taker: the next chunk; false at the end (rethrows the helper's error there).
  bool take(Chunk* chunk) {
    std::unique_lock lock(mu_);
    filled_.wait(lock, [&] { return !chunks_.empty() || finished_; });
    if (chunks_.empty()) {
      if (error_) std::rethrow_exception(error_);
      return false;
    }
    *chunk = std::move(chunks_.front());
    chunks_.pop_front();
    room_.notify_one();
    return true;
  }
  // Taker: stops the helper (on an error of its own).
  void stop() {
    std::lock_guard lock(mu_);
    stopped_ = true;
    chunks_.clear();
    room_.notify_one();
  }

 private:
  std::mutex mu_;
  std::condition_variable room_, filled_;
  std::deque<Chunk> chunks_;
  bool finished_ = false;
  bool stopped_ = false;
  std::exception_ptr error_;
};

struct Stopped {};  // unwinds the helper out of JobLog::take_recovered_jobs()

}  // namespace

void DurableJournal::restore_into(JobQueue& queue, Recovered& recovered, std::int64_t wall_now_ms) {
  queue.reserve_jobs(recovered.jobs.size());
  RestoredJob job;
  for (PutRecord& stored : recovered.jobs) {
    to_restored(stored, wall_now_ms, job);
    queue.restore(job);
  }
  std::vector<PutRecord>().swap(recovered.jobs);
  queue.reserve_ids_below(recovered.next_id);
}

void DurableJournal::restore_deferred(JobQueue& queue, const Recovered& recovered,
                                      std::int64_t wall_now_ms) {
  queue.reserve_jobs(static_cast<std::size_t>(recovered.live_jobs));
  Handoff handoff;
  // The helper: only the log (which the owner leaves alone meanwhile) and build_restored().
  std::thread helper([&] {
    std::exception_ptr error;
    try {
      RestoredJob job;
      Chunk chunk;
      log_.take_recovered_jobs([&](PutRecord& stored) {
        to_restored(stored, wall_now_ms, job);
        if (chunk.tubes.empty() || chunk.tubes.back().second != job.tube) {
          chunk.tubes.emplace_back(chunk.jobs.size(), job.tube);
        }
        chunk.jobs.push_back(queue.build_restored(job));
        if (chunk.jobs.size() == kChunkJobs) {
          if (!handoff.put(std::move(chunk))) throw Stopped{};
          chunk = Chunk{};
          chunk.jobs.reserve(kChunkJobs);
        }
      });
      if (!chunk.jobs.empty()) handoff.put(std::move(chunk));
    } catch (const Stopped&) {
    } catch (...) {
      error = std::current_exception();
    }
    handoff.finish(std::move(error));
  });
  try {
    Chunk chunk;
    while (handoff.take(&chunk)) {
      std::size_t next_tube = 0;
      std::string_view tube;
      for (std::size_t i = 0; i < chunk.jobs.size(); ++i) {
        if (next_tube < chunk.tubes.size() && chunk.tubes[next_tube].first == i) {
          tube = chunk.tubes[next_tube++].second;
        }
        queue.add_restored(std::move(chunk.jobs[i]), tube);
      }
    }
  } catch (...) {
    handoff.stop();
    helper.join();
    throw;
  }
  helper.join();
  queue.reserve_ids_below(recovered.next_id);
}

}  // namespace wheel::jobs
