// SPDX-License-Identifier: Apache-2.0
// Bodies kept on disk only (JobLog::read_body, JobLogOptions::load_bodies, a JobQueue on a
// DurableJournal): a body is read back from its put record before any sync, after compaction moved
// the record, after a restart that never loaded it; a read error or a damaged record is an
// error, never a crash or a wrong body.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <map>
#include <random>
#include <string>

#include "support/fault_injection_fs.h"
#include "support/job_log_on_fs.h"
#include "wheel/jobs/durable/durable_journal.h"
#include "wheel/jobs/log/job_log.h"
#include "wheel/jobs/model/job_queue.h"
#include "wheel/logger.h"

namespace wheel::jobs {
namespace {

using namespace std::chrono_literals;

class LogBodiesTest : public ::testing::Test {
 protected:
  void SetUp() override { logger()->set_level(spdlog::level::off); }
  void TearDown() override { logger()->set_level(spdlog::level::info); }

  JobLogOptions options(SyncPolicy sync) {
    JobLogOptions o = testing::log_options(fs, 4096);
    o.sync = sync;
    o.load_bodies = false;
    return o;
  }
  // Puts a job with a body of its own (any bytes, 0 to 600 of them) and remembers it.
  std::uint64_t put(JobLog& log) {
    PutRecord job;
    EXPECT_FALSE(log.allocate_id(&job.id));
    job.ttr_ms = 60'000;
    job.created_unix_ms = 1'700'000'000'000;
    job.tube = "t";
    job.body.resize(rng() % 601);
    for (char& c : job.body) c = static_cast<char>(rng());
    JobLog::Lsn lsn = 0;
    EXPECT_FALSE(log.put(job, &lsn));
    bodies[job.id] = job.body;
    return job.id;
  }
  void expect_bodies(JobLog& log) {
    for (const auto& [id, body] : bodies) {
      std::string got = "stale";
      EXPECT_FALSE(log.read_body(id, &got)) << "job " << id;
      EXPECT_EQ(got, body) << "job " << id;
    }
  }

  testing::FaultInjectionFs fs;
  std::mt19937_64 rng{20261124};
  std::map<std::uint64_t, std::string> bodies;
};

TEST_F(LogBodiesTest, ReadBackBeforeAnySyncAfterCompactionAndAfterRestart) {
  {
    Recovered r;
    auto log = testing::open_log(options(SyncPolicy::kNever), &r);
    ASSERT_TRUE(log);
    for (int i = 0; i < 300; ++i) put(*log);
    expect_bodies(*log);  // the head's latest from the batch not written yet, the rest from files
    log->commit();        // written, not synced (kNever)
    const std::uint64_t reads = fs.positional_reads();
    // Nothing synced but the segment starts: the reads see the written (page cache) bytes.
    expect_bodies(*log);
    EXPECT_GE(fs.positional_reads(), reads + bodies.size());
    // Delete 9 of 10: compaction rewrites the survivors' records into new segments.
    for (auto it = bodies.begin(); it != bodies.end();) {
      if (it->first % 10 != 0) {
        JobLog::Lsn lsn = 0;
        ASSERT_FALSE(log->remove(it->first, &lsn));
        it = bodies.erase(it);
      } else {
        ++it;
      }
    }
    for (int i = 0; i < 10; ++i) log->poll(static_cast<std::uint64_t>(i));
    ASSERT_GT(log->stats().compacted_segments, 0u);
    ASSERT_GT(log->stats().rewritten_bytes, 0u);
    expect_bodies(*log);
    for (int i = 0; i < 20; ++i) put(*log);  // into the head after the rewrites
    expect_bodies(*log);
  }
  Recovered r;
  auto log = testing::open_log(options(SyncPolicy::kNever), &r);
  ASSERT_TRUE(log);
  ASSERT_EQ(r.jobs.size(), bodies.size());
  for (const PutRecord& job : r.jobs) {
    EXPECT_TRUE(job.body.empty());  // left in the log
    EXPECT_EQ(job.body_size, bodies[job.id].size());
  }
  expect_bodies(*log);
}

TEST_F(LogBodiesTest, AReadErrorOrADamagedRecordIsAnErrorNotABody) {
  Recovered r;
  auto log = testing::open_log(options(SyncPolicy::kAlways), &r);
  ASSERT_TRUE(log);
  const std::uint64_t id = put(*log);
  log->commit();  // written: the read goes to the file
  fs.set_read_failure(true);
  std::string body;
  EXPECT_EQ(log->read_body(id, &body), std::errc::io_error);
  fs.set_read_failure(false);
  expect_bodies(*log);
  // A flipped body byte: the CRC no longer matches (a fresh log reads the damaged copy).
  log.reset();
  const std::string path = "/log/00000000000000000001.wjl";
  std::string data = fs.contents(path);
  const std::size_t at = data.find(bodies[id].substr(0, 8));
  ASSERT_NE(at, std::string::npos);
  Recovered again;
  log = testing::open_log(options(SyncPolicy::kAlways), &again);
  ASSERT_TRUE(log);
  data[at] = static_cast<char>(data[at] ^ 0x20);
  fs.set_contents(path, data);
  EXPECT_EQ(log->read_body(id, &body), std::errc::illegal_byte_sequence);
}

// A queue on a DurableJournal holds no body: each is read from the log when asked for.
TEST_F(LogBodiesTest, AQueueOnADurableJournalHoldsNoBodies) {
  Recovered r;
  auto log = testing::open_log(options(SyncPolicy::kNever), &r);
  ASSERT_TRUE(log);
  DurableJournal journal(*log, SyncPolicy::kNever, [] { return std::int64_t{1'700'000'000'000}; });
  JobQueue queue({}, &journal, 0ms);
  const SessionId s = queue.open_session();
  const PutResult p = queue.put(s, 0, 0ms, 60s, "on disk only");
  ASSERT_EQ(p.outcome, Outcome::kOk);
  const Job* job = queue.peek(p.id);
  ASSERT_NE(job, nullptr);
  EXPECT_TRUE(job->body_in_journal);  // body_data holds the journal's reference instead
  EXPECT_EQ(job->body_size, 12u);
  EXPECT_EQ(queue.counters().body_bytes, 12u);
  std::string scratch;
  fs.set_read_failure(true);
  // Not written yet (the log writes a batch at commit()): read from the log's batch.
  EXPECT_EQ(queue.body(*job, scratch), "on disk only");
  log->commit();
  EXPECT_EQ(queue.body(*job, scratch), std::nullopt);
  // A reserve whose job cannot be sent gives it back, as if it had not happened.
  const ReserveResult res = queue.reserve(s, 0ms);
  ASSERT_EQ(res.outcome, Outcome::kOk);
  EXPECT_EQ(queue.unreserve(s, p.id), Outcome::kOk);
  EXPECT_EQ(queue.peek(p.id)->state, JobState::kReady);
  EXPECT_EQ(queue.job_stats(p.id)->reserves, 0u);
  EXPECT_EQ(queue.unreserve(s, p.id), Outcome::kNotFound);
  fs.set_read_failure(false);
  EXPECT_EQ(queue.body(*queue.peek(p.id), scratch), "on disk only");
}

}  // namespace
}  // namespace wheel::jobs
