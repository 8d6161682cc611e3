// SPDX-License-Identifier: Apache-2.0
// DurableJournal (wheel/jobs/durable/durable_journal.h): a JobQueue kept in a JobLog on the
// fault-injecting file system. Every durable change survives a reopen with its id, tube, priority
// and state; delays keep their wall-clock due time; replies wait for the fdatasync with `always`; a
// log that refuses leaves the queue unchanged: OUT_OF_MEMORY for a full disk, INTERNAL_ERROR for a
// log stopped by an I/O error.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>

#include "support/fault_injection_fs.h"
#include "support/job_log_on_fs.h"
#include "wheel/jobs/durable/durable_journal.h"
#include "wheel/jobs/model/job_queue.h"

namespace wheel::jobs {
namespace {

using namespace std::chrono_literals;

class DurableJournalTest : public ::testing::Test {
 protected:
  JobLogOptions options(SyncPolicy sync = SyncPolicy::kAlways) {
    JobLogOptions o = testing::log_options(fs, JobLogOptions{}.segment_bytes);
    o.sync = sync;
    return o;
  }
  std::unique_ptr<JobLog> open(Recovered* r, SyncPolicy sync = SyncPolicy::kAlways) {
    return testing::open_log(options(sync), r);
  }

  testing::FaultInjectionFs fs;
  std::int64_t wall = 1'700'000'000'000;  // Unix ms, moved by hand
  DurableJournal::WallClock clock = [this] { return wall; };

  // A queue kept in the log: the log opened (its recovered state ignored), a journal with
  // `policy` on it, the queue on the journal, and one session of the queue.
  struct Journaled {
    Journaled(DurableJournalTest& t, SyncPolicy policy)
        : log(t.open(&recovered)),
          journal(*log, policy, t.clock),
          queue({}, &journal),
          session(queue.open_session()) {}
    Recovered recovered;
    std::unique_ptr<JobLog> log;
    DurableJournal journal;
    JobQueue queue;
    SessionId session;
  };
};

TEST_F(DurableJournalTest, EveryDurableChangeSurvivesAReopen) {
  {
    Journaled j(*this, SyncPolicy::kAlways);
    JobQueue& queue = j.queue;
    const SessionId s = j.session;
    queue.use(s, "mail");
    queue.watch(s, "mail");
    ASSERT_EQ(queue.put(s, 5, 0ms, 30s, "ready").id, 1u);
    ASSERT_EQ(queue.put(s, 1, 10s, 30s, "delayed").id, 2u);
    ASSERT_EQ(queue.put(s, 0, 0ms, 30s, "deleted").id, 3u);
    ASSERT_EQ(queue.remove(s, 3), Outcome::kOk);
    ASSERT_EQ(queue.put(s, 0, 0ms, 30s, "buried").id, 4u);
    ASSERT_EQ(queue.reserve_job(s, 4).outcome, Outcome::kOk);
    ASSERT_EQ(queue.bury(s, 4, 7), Outcome::kOk);
    ASSERT_EQ(queue.put(s, 0, 0ms, 30s, "released").id, 5u);
    ASSERT_EQ(queue.reserve_job(s, 5).outcome, Outcome::kOk);
    ASSERT_EQ(queue.release(s, 5, 3, 5s), Outcome::kOk);
    ASSERT_EQ(queue.put(s, 0, 0ms, 30s, "reserved").id, 6u);
    ASSERT_EQ(queue.reserve_job(s, 6).outcome, Outcome::kOk);  // not durable: ready again
    bool durable = false;
    j.journal.when_durable([&] { durable = true; });
    EXPECT_TRUE(durable);  // no sync thread: the fdatasync ran inside
  }
  wall += 6000;  // the released job (due +5 s) fell due while down; the delayed one (+10 s) not
  Recovered r;
  auto log = open(&r);
  JobQueue queue({}, nullptr, 100ms);
  DurableJournal::restore_into(queue, r, wall);
  EXPECT_EQ(queue.peek(3), nullptr);
  EXPECT_EQ(queue.peek(1)->state, JobState::kReady);
  EXPECT_EQ(queue.peek(1)->priority, 5u);
  std::string scratch;
  EXPECT_EQ(queue.body(*queue.peek(1), scratch), "ready");
  EXPECT_EQ(queue.peek(1)->tube->name(), "mail");
  EXPECT_EQ(queue.peek(2)->state, JobState::kDelayed);
  EXPECT_EQ(queue.peek(2)->deadline, 100ms + 4000ms);  // 4 s of its delay left
  EXPECT_EQ(queue.peek(4)->state, JobState::kBuried);
  EXPECT_EQ(queue.peek(4)->priority, 7u);
  EXPECT_EQ(queue.peek(5)->state, JobState::kReady);
  EXPECT_EQ(queue.peek(5)->priority, 3u);
  EXPECT_EQ(queue.peek(6)->state, JobState::kReady);
  EXPECT_EQ(queue.peek(6)->ttr, 30s);
  EXPECT_GE(queue.next_id(), 7u);
}

// beanstalkd writes a job's whole record (created_at, delay, deadline_at, the five counters)
// with each binlog change and reads it back on replay; reserves and TTR timeouts are not
// written, so they count as of the job's last change. stats-job after a restart reads the same.
TEST_F(DurableJournalTest, StatsJobAfterARestartReadsAsBeanstalkdsAfterABinlogReplay) {
  std::uint64_t id = 0;
  std::uint64_t quiet = 0;
  {
    Recovered r;
    auto log = open(&r);
    DurableJournal journal(*log, SyncPolicy::kNever, clock);
    JobQueue queue({}, &journal, 0ms);
    SessionId s = queue.open_session();
    id = queue.put(s, 5, 0ms, 2s, "a").id;
    quiet = queue.put(s, 5, 30s, 2s, "b").id;  // nothing happens to it after its put
    ASSERT_EQ(queue.reserve(s, 0ms).job->id, id);
    queue.advance(2000ms);  // the TTR runs out: timeouts 1 (not durable by itself)
    wall += 2000;
    ASSERT_EQ(queue.reserve(s, 0ms).job->id, id);
    ASSERT_EQ(queue.release(s, id, 7, 10s), Outcome::kOk);  // releases 1, delay 10 s
    queue.advance(12'000ms);
    wall += 10'000;
    ASSERT_EQ(queue.reserve(s, 0ms).job->id, id);
    ASSERT_EQ(queue.bury(s, id, 8), Outcome::kOk);
    ASSERT_EQ(queue.kick_job(id), Outcome::kOk);   // the last durable change: kicks 1
    ASSERT_EQ(queue.reserve(s, 0ms).job->id, id);  // reserves 4, not durable
    EXPECT_EQ(queue.job_stats(id)->reserves, 4u);
  }
  wall += 8000;  // down for 8 s: 20 s after both puts
  Recovered r;
  auto log = open(&r);
  JobQueue queue({}, nullptr, 500ms);
  DurableJournal::restore_into(queue, r, wall);
  const auto job = queue.job_stats(id);
  ASSERT_TRUE(job.has_value());
  EXPECT_EQ(job->state, JobState::kReady);  // reserved before: ready again
  EXPECT_EQ(job->age, 20'000ms);            // from its put, on the wall clock
  EXPECT_EQ(job->delay, 10s);               // its last release's
  EXPECT_EQ(job->priority, 8u);             // the bury's, kept by the kick
  EXPECT_EQ(job->reserves, 3u);             // as of the kick
  EXPECT_EQ(job->timeouts, 1u);
  EXPECT_EQ(job->releases, 1u);
  EXPECT_EQ(job->buries, 1u);
  EXPECT_EQ(job->kicks, 1u);
  const auto delayed = queue.job_stats(quiet);
  ASSERT_TRUE(delayed.has_value());
  EXPECT_EQ(delayed->state, JobState::kDelayed);
  EXPECT_EQ(delayed->age, 20'000ms);
  EXPECT_EQ(delayed->delay, 30s);
  EXPECT_EQ(delayed->time_left, 10s);  // due 30 s after its put, 20 s of which went by
  EXPECT_EQ(
      delayed->reserves + delayed->timeouts + delayed->releases + delayed->buries + delayed->kicks,
      0u);
  queue.advance(500ms + 20'000ms);
  EXPECT_EQ(queue.job_stats(id)->age, 40'000ms);  // and it goes on
}

TEST_F(DurableJournalTest, KickedJobsComeBackReady) {
  {
    Journaled j(*this, SyncPolicy::kAlways);
    JobQueue& queue = j.queue;
    const SessionId s = j.session;
    queue.put(s, 2, 0ms, 30s, "a");
    queue.reserve(s, 0ms);
    queue.bury(s, 1, 2);
    queue.put(s, 2, 1h, 30s, "b");
    EXPECT_EQ(queue.kick(s, 10), 1u);
    EXPECT_EQ(queue.kick_job(2), Outcome::kOk);
    j.journal.when_durable([] {});
  }
  Recovered r;
  auto log = open(&r);
  JobQueue queue;
  DurableJournal::restore_into(queue, r, wall);
  EXPECT_EQ(queue.peek(1)->state, JobState::kReady);
  EXPECT_EQ(queue.peek(2)->state, JobState::kReady);
}

TEST_F(DurableJournalTest, IdsAreNeverReusedAfterAPowerLoss) {
  {
    Journaled j(*this, SyncPolicy::kNever);
    JobQueue& queue = j.queue;
    const SessionId s = j.session;
    for (int i = 0; i < 5; ++i) queue.put(s, 0, 0ms, 1s, "x");
  }
  std::mt19937_64 rng(7);
  fs.power_loss(rng, true);
  Recovered r;
  auto log = open(&r);
  DurableJournal journal(*log, SyncPolicy::kNever, clock);
  JobQueue queue({}, &journal);
  DurableJournal::restore_into(queue, r, wall);
  SessionId s = queue.open_session();
  EXPECT_GT(queue.put(s, 0, 0ms, 1s, "y").id, 5u);
}

TEST_F(DurableJournalTest, ADiskFullLogRefusesPutsAndTheQueueStaysAsItWas) {
  fs.set_reserve_supported(false);  // each record written as it comes: the next one is refused
  Journaled j(*this, SyncPolicy::kAlways);
  JobQueue& queue = j.queue;
  const SessionId s = j.session;
  ASSERT_EQ(queue.put(s, 0, 0ms, 1s, "small").outcome, Outcome::kOk);
  fs.set_capacity(fs.used_bytes());
  PutResult refused = queue.put(s, 0, 0ms, 1s, std::string(10'000, 'z'));
  EXPECT_EQ(refused.outcome, Outcome::kOutOfMemory);  // beanstalkd's "cannot store it"
  EXPECT_EQ(j.journal.last_refusal(), Refusal::kFull);
  EXPECT_EQ(queue.counters().total_jobs, 1u);
  EXPECT_EQ(queue.counters().ready, 1u);
}

TEST_F(DurableJournalTest, WithSpaceSetAsideTheDiskFullRefusalComesWhenItIsUsedUp) {
  // Batched writes go into space set aside beforehand (WritableFile::reserve): a full disk
  // refuses the put that no longer fits there, at once, and every put accepted before is kept.
  std::uint64_t accepted = 1;
  {
    Journaled j(*this, SyncPolicy::kAlways);
    JobQueue& queue = j.queue;
    const SessionId s = j.session;
    ASSERT_EQ(queue.put(s, 0, 0ms, 1s, "small").outcome, Outcome::kOk);
    fs.set_capacity(fs.used_bytes());
    PutResult refused;
    for (int i = 0; i < 10'000; ++i) {  // 10 KB each: a few hundred fill the space set aside
      refused = queue.put(s, 0, 0ms, 1s, std::string(10'000, 'z'));
      if (refused.outcome != Outcome::kOk) break;
      ++accepted;
    }
    EXPECT_EQ(refused.outcome, Outcome::kOutOfMemory);
    EXPECT_EQ(j.journal.last_refusal(), Refusal::kFull);
    EXPECT_EQ(queue.counters().total_jobs, accepted);
    bool durable = false;
    j.journal.when_durable([&] { durable = true; });
    EXPECT_TRUE(durable);
  }  // the queue, the journal, then the log
  Recovered r;
  auto log = open(&r);
  EXPECT_EQ(r.jobs.size(), accepted);
}

TEST_F(DurableJournalTest, ALogStoppedByAnIoErrorAnswersInternalErrorNotOutOfMemory) {
  fs.set_reserve_supported(false);  // each record written as it comes: that write fails
  Journaled j(*this, SyncPolicy::kAlways);
  JobQueue& queue = j.queue;
  const SessionId s = j.session;
  const std::uint64_t id = queue.put(s, 0, 0ms, 1s, "kept").id;
  ASSERT_NE(id, 0u);
  fs.set_ops_until_crash(1);  // the next write fails with EIO: the log stops
  EXPECT_EQ(queue.put(s, 0, 0ms, 1s, "refused").outcome, Outcome::kInternalError);
  EXPECT_EQ(j.journal.last_refusal(), Refusal::kFailed);
  EXPECT_EQ(queue.remove(s, id), Outcome::kInternalError);
  EXPECT_NE(queue.peek(id), nullptr);  // reads go on
  EXPECT_EQ(queue.counters().total_jobs, 1u);
}

TEST_F(DurableJournalTest, ABatchWhoseWriteFailsIsNeverAcknowledgedAndLaterChangesAreRefused) {
  // Batched writes (the default): the put is taken into the batch, the batch's one write fails
  // with EIO at when_durable(): its callback runs as lost, never as durable; then the log
  // refuses everything with INTERNAL_ERROR.
  Journaled j(*this, SyncPolicy::kAlways);
  JobQueue& queue = j.queue;
  const SessionId s = j.session;
  const std::uint64_t id = queue.put(s, 0, 0ms, 1s, "kept").id;
  ASSERT_NE(id, 0u);
  bool kept = false;
  j.journal.when_durable([&] { kept = !j.journal.calling_back_lost(); });
  EXPECT_TRUE(kept);
  fs.set_ops_until_crash(1);
  EXPECT_EQ(queue.put(s, 0, 0ms, 1s, "lost").outcome, Outcome::kOk);  // gathered, not written
  int calls = 0;
  bool lost = false;
  j.journal.when_durable([&] {
    ++calls;
    lost = j.journal.calling_back_lost();
  });
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(lost);
  EXPECT_EQ(queue.put(s, 0, 0ms, 1s, "refused").outcome, Outcome::kInternalError);
  EXPECT_EQ(j.journal.last_refusal(), Refusal::kFailed);
  EXPECT_EQ(queue.remove(s, id), Outcome::kInternalError);
  EXPECT_NE(queue.peek(id), nullptr);  // reads go on
  // A batch that recorded nothing is answered (not as lost).
  lost = true;
  j.journal.when_durable([&] { lost = j.journal.calling_back_lost(); });
  EXPECT_FALSE(lost);
}

}  // namespace
}  // namespace wheel::jobs
