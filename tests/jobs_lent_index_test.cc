// SPDX-License-Identifier: Apache-2.0
// A JobQueue on a LogJournal lends the log its index (log_index.h, JobLog::lend_index): the
// log keeps nothing per job, the queue's jobs hold where their put records are
// (Job::journal_ref). Compaction must then still find every live job and its state through the
// queue, move the jobs' places as it rewrites them, count live bytes as the log's own index
// would, and never take a job for dead while no queue answers.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <map>
#include <random>
#include <stdexcept>
#include <string>

#include "log_format.h"
#include "record_codec.h"
#include "support/fault_injection_fs.h"
#include "support/job_log_on_fs.h"
#include "wheel/jobs/durable/log_journal.h"
#include "wheel/jobs/log/job_log.h"
#include "wheel/jobs/model/job_queue.h"
#include "wheel/logger.h"

namespace wheel::jobs {
namespace {

using namespace std::chrono_literals;

constexpr std::int64_t kWall = 1'700'000'000'000;  // Unix ms

class LentIndexTest : public ::testing::Test {
 protected:
  void SetUp() override { logger()->set_level(spdlog::level::off); }
  void TearDown() override { logger()->set_level(spdlog::level::info); }

  JobLogOptions options() {
    JobLogOptions o = testing::log_options(fs, 4096);  // small segments: compaction soon
    o.sync = SyncPolicy::kNever;
    o.load_bodies = false;
    return o;
  }
  std::string body_for(int i) {
    return std::string(static_cast<std::size_t>(i % 300), 'a' + i % 26);
  }

  struct Expected {
    std::string tube;
    std::string body;
    StoredState state;
    std::uint32_t priority;
  };

  testing::FaultInjectionFs fs;

  // The log opened, a journal on it, a queue on the journal (which lends the log its jobs).
  struct Served {
    explicit Served(LentIndexTest& t)
        : log(opened(testing::open_log(t.options(), &recovered))),
          journal(*log, SyncPolicy::kNever, [] { return kWall; }),
          queue(std::make_unique<JobQueue>(JobQueueLimits{}, &journal, 0ms)) {}
    static std::unique_ptr<JobLog> opened(std::unique_ptr<JobLog> log) {
      if (!log) throw std::runtime_error("the log did not open");
      return log;
    }
    Recovered recovered;
    std::unique_ptr<JobLog> log;
    LogJournal journal;
    std::unique_ptr<JobQueue> queue;
  };
};

// Jobs in every state, most deleted, compaction while serving: each live job's body reads back
// from where compaction moved it, the live bytes are what a fresh log counts, and a restart
// finds every job in the state the queue had it in (a reserved one ready).
TEST_F(LentIndexTest, CompactionMovesTheJobsTheQueueHolds) {
  std::map<std::uint64_t, Expected> expected;
  std::uint64_t live_before = 0;
  {
    Served served(*this);
    JobQueue& queue = *served.queue;
    JobLog* log = served.log.get();
    const SessionId s = queue.open_session();
    std::vector<std::uint64_t> ids;
    for (int i = 0; i < 400; ++i) {
      const std::string tube = i % 3 == 0 ? "mail" : "sms";
      queue.use(s, tube);
      const Millis delay = i % 5 == 0 ? 3600s : 0ms;
      const PutResult p = queue.put(s, static_cast<std::uint32_t>(i), delay, 60s, body_for(i));
      ASSERT_EQ(p.outcome, Outcome::kOk);
      ids.push_back(p.id);
      expected[p.id] = {tube, body_for(i),
                        delay.count() > 0 ? StoredState::kDelayed : StoredState::kReady,
                        static_cast<std::uint32_t>(i)};
    }
    queue.watch(s, "mail");
    queue.watch(s, "sms");
    // Some reserved and buried, some reserved and released with a delay, some left reserved.
    for (int i = 0; i < 30; ++i) {
      const ReserveResult res = queue.reserve(s, 0ms);
      ASSERT_EQ(res.outcome, Outcome::kOk);
      const std::uint64_t id = res.job->id;
      if (i % 3 == 0) {
        ASSERT_EQ(queue.bury(s, id, 7), Outcome::kOk);
        expected[id].state = StoredState::kBuried;
        expected[id].priority = 7;
      } else if (i % 3 == 1) {
        ASSERT_EQ(queue.release(s, id, 9, 7200s), Outcome::kOk);
        expected[id].state = StoredState::kDelayed;
        expected[id].priority = 9;
      }  // else stays reserved: stored ready
    }
    // Most deleted (not the reserved ones: only their holder may).
    std::mt19937_64 rng(19);
    for (std::uint64_t id : ids) {
      if (rng() % 10 < 8 && queue.peek(id)->state != JobState::kReserved) {
        ASSERT_EQ(queue.remove(s, id), Outcome::kOk);
        expected.erase(id);
      }
    }
    for (int i = 0; i < 200; ++i) served.journal.poll(static_cast<std::uint64_t>(i));
    const JobLogStats st = log->stats();
    ASSERT_GT(st.compacted_segments, 0u);
    EXPECT_LE(st.total_bytes, 2 * st.live_bytes + 2 * 4096);
    std::string scratch;
    for (const auto& [id, e] : expected) {
      const Job* job = queue.peek(id);
      ASSERT_NE(job, nullptr) << id;
      EXPECT_EQ(queue.body(*job, scratch), e.body) << "job " << id;
    }
    live_before = st.live_bytes;
    log->sync_now();
  }  // the queue, the journal, then the log
  Served served(*this);
  const Recovered& r = served.recovered;
  EXPECT_EQ(served.log->stats().live_bytes, live_before);
  ASSERT_EQ(r.jobs.size(), expected.size());
  for (const StoredJob& job : r.jobs) {
    const auto it = expected.find(job.id);
    ASSERT_NE(it, expected.end()) << job.id;
    EXPECT_EQ(job.tube, it->second.tube) << job.id;
    EXPECT_EQ(job.body_size, it->second.body.size()) << job.id;
    EXPECT_EQ(job.state, it->second.state) << job.id;
    EXPECT_EQ(job.priority, it->second.priority) << job.id;
    if (job.state == StoredState::kDelayed) {
      EXPECT_GE(job.due_unix_ms, kWall + 3'600'000) << job.id;
    }
  }
  // A new queue restored from it reads every body at the place the restart handed out.
  JobQueue& queue = *served.queue;
  LogJournal::restore_into(queue, served.recovered, kWall);
  std::string scratch;
  for (const auto& [id, e] : expected) {
    const Job* job = queue.peek(id);
    ASSERT_NE(job, nullptr) << id;
    EXPECT_EQ(queue.body(*job, scratch), e.body) << "job " << id;
  }
}

// Serving a reserve reads the body where the job says its put record is (Job::journal_ref):
// the log never asks the queue for the job it was handed. With no index lent at all (a lookup
// by id would find nothing) every body still reads back.
TEST_F(LentIndexTest, BodiesAreReadByPositionWithoutALookupById) {
  Served served(*this);
  JobQueue& queue = *served.queue;
  const SessionId s = queue.open_session();
  for (int i = 0; i < 50; ++i) {
    ASSERT_EQ(queue.put(s, 0, 0ms, 60s, body_for(i + 1)).outcome, Outcome::kOk);
  }
  served.journal.attach(nullptr);  // reserves record nothing: no change needs the index
  std::string scratch;
  for (int i = 0; i < 50; ++i) {
    const ReserveResult res = queue.reserve(s, 0ms);
    ASSERT_EQ(res.outcome, Outcome::kOk);
    EXPECT_EQ(queue.body(*res.job, scratch), body_for(i + 1));
  }
}

// Once the queue is gone (JobQueue's destructor detaches it), nothing answers for the jobs:
// compaction waits rather than take them for dead.
TEST_F(LentIndexTest, WithoutAQueueCompactionDropsNoLiveJob) {
  std::size_t live = 0;
  {
    Served served(*this);
    JobQueue& queue = *served.queue;
    const SessionId s = queue.open_session();
    for (int i = 0; i < 300; ++i) {
      const PutResult p = queue.put(s, 0, 0ms, 60s, body_for(i));
      ASSERT_EQ(p.outcome, Outcome::kOk);
      if (i % 4 != 0) {
        ASSERT_EQ(queue.remove(s, p.id), Outcome::kOk);
      }
    }
    live = queue.counters().ready;
    served.queue.reset();
    // Over its bound (most of it deleted), with no queue lent: nothing may go.
    for (int i = 0; i < 200; ++i) served.journal.poll(static_cast<std::uint64_t>(i));
    EXPECT_EQ(served.log->stats().compacted_segments, 0u);
    served.log->sync_now();
  }
  Recovered r;
  ASSERT_TRUE(testing::open_log(options(), &r));
  EXPECT_EQ(r.jobs.size(), live);
}

// Puts `n` jobs with 200-byte bodies and deletes them: dead bytes, so compaction has work.
void put_and_delete(JobQueue& queue, SessionId s, int n) {
  for (int i = 0; i < n; ++i) {
    const PutResult p = queue.put(s, 0, 0ms, 60s, std::string(200, 'f'));
    ASSERT_EQ(p.outcome, Outcome::kOk);
    ASSERT_EQ(queue.remove(s, p.id), Outcome::kOk);
  }
}

// A job unchanged since its put keeps its put's state through compaction: a delayed job the
// queue now holds ready (its delay ended; not a durable change) comes back delayed at its
// exact due time, and its rewritten record is no bigger (no counters).
TEST_F(LentIndexTest, AnUnchangedJobKeepsItsPutThroughCompaction) {
  std::vector<std::uint64_t> ids;
  std::uint64_t live_before = 0;
  {
    Served served(*this);
    JobQueue& queue = *served.queue;
    const SessionId s = queue.open_session();
    for (int i = 0; i < 20; ++i) ids.push_back(queue.put(s, 3, 1s, 60s, body_for(i)).id);
    queue.advance(2000ms);  // their delays ended: ready in the queue, delayed in the log
    ASSERT_EQ(queue.counters().ready, 20u);
    live_before = served.log->stats().live_bytes;
    put_and_delete(queue, s, 100);
    for (int i = 0; i < 200; ++i) served.journal.poll(static_cast<std::uint64_t>(i));
    ASSERT_GT(served.log->stats().compacted_segments, 0u);
    EXPECT_EQ(served.log->stats().live_bytes, live_before);
    served.log->sync_now();
  }
  Served served(*this);
  ASSERT_EQ(served.recovered.jobs.size(), ids.size());
  for (const StoredJob& job : served.recovered.jobs) {
    EXPECT_EQ(job.state, StoredState::kDelayed) << job.id;
    EXPECT_EQ(job.due_unix_ms, kWall + 1000) << job.id;
    EXPECT_EQ(job.counters.delay_ms, 1000u) << job.id;
  }
}

// A change recorded by a version-1 log (an update record without counters) is a change too:
// compaction takes that job's state from the queue, not from its older put.
TEST_F(LentIndexTest, AVersionOneChangeIsKeptThroughCompaction) {
  std::uint64_t id = 0;
  {
    Served served(*this);
    id = served.queue->put(served.queue->open_session(), 3, 0ms, 60s, "old change").id;
    served.log->sync_now();
  }
  // Appended as a version-1 log wrote it: buried, priority 5, no counters.
  const std::string path = "/log/00000000000000000001.wjl";
  std::string data = fs.contents(path);
  StoredChange change;
  change.id = id;
  change.state = StoredState::kBuried;
  change.priority = 5;
  const std::string v2 = codec::encode_change(change);
  log::append_record(&data, log::RecordType::kUpdate,
                     std::string_view(v2).substr(0, v2.size() - codec::kCountersSize));
  fs.set_contents(path, data);
  {
    Served served(*this);
    ASSERT_EQ(served.recovered.jobs.size(), 1u);
    ASSERT_EQ(served.recovered.jobs[0].state, StoredState::kBuried);
    LogJournal::restore_into(*served.queue, served.recovered, kWall);
    put_and_delete(*served.queue, served.queue->open_session(), 100);
    for (int i = 0; i < 200; ++i) served.journal.poll(static_cast<std::uint64_t>(i));
    ASSERT_GT(served.log->stats().compacted_segments, 0u);
    served.log->sync_now();
  }
  Served served(*this);
  ASSERT_EQ(served.recovered.jobs.size(), 1u);
  EXPECT_EQ(served.recovered.jobs[0].state, StoredState::kBuried);
  EXPECT_EQ(served.recovered.jobs[0].priority, 5u);
}

}  // namespace
}  // namespace wheel::jobs
