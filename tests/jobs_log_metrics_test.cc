// SPDX-License-Identifier: Apache-2.0
// The job log's metrics: one sync-latency and batch-size observation per group commit (counted
// against the fault-injecting file system's fdatasyncs), latency on a clock moved by hand while
// a sync is held, the histograms read from another thread while the sync thread writes them
// (TSan), and live and dead bytes through puts, deletes and compaction.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "record_codec.h"
#include "support/fault_injection_fs.h"
#include "support/job_log_on_fs.h"
#include "support/wait_until.h"
#include "wheel/jobs/log/job_log.h"
#include "wheel/logger.h"

namespace wheel::jobs {
namespace {

using namespace std::chrono_literals;
using testing::FaultInjectionFs;

// The bucket of `bounds` a value of `value` shown units falls in.
template <std::size_t N>
std::size_t bucket_of(const std::array<double, N>& bounds, double value) {
  std::size_t i = 0;
  while (i < N && value > bounds[i]) ++i;
  return i;
}

class LogMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override { logger()->set_level(spdlog::level::off); }
  void TearDown() override { logger()->set_level(spdlog::level::info); }

  JobLogOptions options() {
    JobLogOptions o = testing::log_options(fs_, JobLogOptions{}.segment_bytes);
    o.sync_thread = true;  // as in a server; a test that wants inline syncs turns it off
    return o;
  }
  std::unique_ptr<JobLog> open(const JobLogOptions& o) {
    Recovered r;
    return testing::open_log(o, &r);
  }
  PutRecord job(JobLog& log, std::size_t body = 10) {
    PutRecord j;
    EXPECT_FALSE(log.allocate_id(&j.id));
    j.tube = "default";
    j.body = std::string(body, 'b');
    return j;
  }

  FaultInjectionFs fs_;
};

TEST_F(LogMetricsTest, EachGroupCommitIsOneObservationOfEachHistogram) {
  JobLogOptions o = options();
  o.sync_thread = false;  // commit() syncs inline: one fdatasync per commit
  auto log = open(o);
  JobLog::Lsn lsn = 0;
  ASSERT_FALSE(log->put(job(*log), &lsn));
  log->commit();  // warm-up: the id lease and the first put
  const LogSyncMetrics m0 = log->sync_metrics();
  const std::uint64_t syncs0 = fs_.file_syncs();
  const std::uint64_t total0 = log->stats().total_bytes;
  std::uint64_t puts = 0;
  for (int round = 1; round <= 6; ++round) {
    for (int i = 0; i < round; ++i, ++puts) ASSERT_FALSE(log->put(job(*log, 100), &lsn));
    log->commit();
  }
  const LogSyncMetrics m = log->sync_metrics();
  const std::uint64_t batches = m.seconds.count() - m0.seconds.count();
  EXPECT_EQ(batches, 6u);
  EXPECT_EQ(fs_.file_syncs() - syncs0, batches) << "one fdatasync per batch, each one counted";
  EXPECT_EQ(m.records.count() - m0.records.count(), batches);
  EXPECT_EQ(m.bytes.count() - m0.bytes.count(), batches);
  EXPECT_EQ(m.records.sum - m0.records.sum, puts);
  // Each round's batch: 1..6 puts; the 6-put batch lands in the (4, 8] bucket.
  EXPECT_EQ(m.records.buckets[bucket_of(kSyncBatchRecordsBounds, 6)] -
                m0.records.buckets[bucket_of(kSyncBatchRecordsBounds, 6)],
            2u)  // 5 and 6
      << "records per batch in the wrong bucket";
  // Every byte appended between the first and the last commit was in one of the batches (each
  // commit's sync also covers the bookkeeping record written after the one before).
  EXPECT_EQ(m.bytes.sum - m0.bytes.sum, log->stats().total_bytes - total0);
  EXPECT_GE(m.bytes.sum - m0.bytes.sum, puts * codec::put_record_size(job(*log, 100)));
}

TEST_F(LogMetricsTest, SyncSecondsIsTheTimeTheFdatasyncsTookOnTheLogsClock) {
  std::atomic<std::int64_t> now_ns{1'000'000'000};
  JobLogOptions o = options();
  o.sync_clock = [&] { return std::chrono::nanoseconds(now_ns.load()); };
  auto log = open(o);
  std::vector<PutRecord> jobs;
  for (int i = 0; i < 100; ++i) jobs.push_back(job(*log));  // the id lease syncs inline
  const LogSyncMetrics m0 = log->sync_metrics();

  fs_.set_sync_gate(false);
  JobLog::Lsn lsn = 0;
  ASSERT_FALSE(log->put(jobs[0], &lsn));
  log->commit();
  ASSERT_TRUE(wheel_test::wait_until([&] { return fs_.syncs_waiting() == 1; }));
  for (std::size_t i = 1; i < jobs.size(); ++i) {  // these share the next sync
    ASSERT_FALSE(log->put(jobs[i], &lsn));
    log->commit();
  }
  now_ns += 7'000'000;  // the held fdatasync "takes" 7 ms
  fs_.set_sync_gate(true);
  ASSERT_TRUE(wheel_test::wait_until([&] { return log->durable_lsn() >= lsn; }));
  const LogSyncMetrics m = log->sync_metrics();

  ASSERT_EQ(m.seconds.count() - m0.seconds.count(), 2u);
  EXPECT_EQ(m.seconds.sum - m0.seconds.sum, 7'000'000u) << "the second sync took no time";
  const std::size_t b7 = bucket_of(kSyncSecondsBounds, 0.007);
  EXPECT_EQ(m.seconds.buckets[b7] - m0.seconds.buckets[b7], 1u);
  EXPECT_EQ(m.seconds.buckets[0] - m0.seconds.buckets[0], 1u);
  // Group commit shows as batch sizes 1 and 99.
  EXPECT_EQ(m.records.buckets[0] - m0.records.buckets[0], 1u);
  const std::size_t b99 = bucket_of(kSyncBatchRecordsBounds, 99);
  EXPECT_EQ(m.records.buckets[b99] - m0.records.buckets[b99], 1u);
  EXPECT_EQ(m.records.sum - m0.records.sum, 100u);
}

// Under TSan: the loop thread reads the histograms while the sync thread writes them.
TEST_F(LogMetricsTest, HistogramsAreReadWhileTheSyncThreadWritesThem) {
  auto log = open(options());
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> reads{0};
  std::thread reader([&] {
    std::uint64_t last = 0;
    while (!stop.load()) {
      const LogSyncMetrics m = log->sync_metrics();
      EXPECT_GE(m.seconds.count(), last) << "a count went backwards";
      last = m.seconds.count();
      ++reads;
    }
  });
  // The reader reads before the puts begin, however late the scheduler starts it (under ASan
  // on a busy machine the puts could all finish before its first read).
  ASSERT_TRUE(wheel_test::wait_until([&] { return reads.load() > 0; }));
  constexpr int kPuts = 200;
  std::vector<PutRecord> jobs;
  for (int i = 0; i < kPuts; ++i) jobs.push_back(job(*log));  // the id lease syncs inline
  const LogSyncMetrics m0 = log->sync_metrics();
  const std::uint64_t syncs0 = fs_.file_syncs();
  for (int i = 0; i < kPuts; ++i) {
    JobLog::Lsn lsn = 0;
    ASSERT_FALSE(log->put(jobs[static_cast<std::size_t>(i)], &lsn));
    log->commit();
    ASSERT_TRUE(wheel_test::wait_until([&] { return log->durable_lsn() >= lsn; }));
    (void)log->sync_metrics();  // the owner reads too
  }
  stop = true;
  reader.join();
  const LogSyncMetrics m = log->sync_metrics();
  // Each put waited for its own sync.
  EXPECT_EQ(m.seconds.count() - m0.seconds.count(), static_cast<std::uint64_t>(kPuts));
  EXPECT_EQ(fs_.file_syncs() - syncs0, static_cast<std::uint64_t>(kPuts));
  EXPECT_EQ(m.records.sum - m0.records.sum, static_cast<std::uint64_t>(kPuts));
}

TEST_F(LogMetricsTest, LiveAndDeadBytesFollowPutsDeletesAndCompaction) {
  JobLogOptions o = options();
  o.sync_thread = false;
  o.segment_bytes = 4096;
  auto log = open(o);
  const JobLogStats s0 = log->stats();
  EXPECT_EQ(s0.live_bytes, 0u);
  EXPECT_EQ(s0.dead_bytes, s0.total_bytes) << "a fresh log holds only bookkeeping";

  JobLog::Lsn lsn = 0;
  std::vector<PutRecord> jobs;
  for (int i = 0; i < 3; ++i) {
    jobs.push_back(job(*log, 200));
    ASSERT_FALSE(log->put(jobs.back(), &lsn));
  }
  const std::uint64_t put_size = codec::put_record_size(jobs[0]);
  const JobLogStats s1 = log->stats();
  EXPECT_EQ(s1.live_bytes, 3 * put_size);
  EXPECT_EQ(s1.dead_bytes + s1.live_bytes, s1.total_bytes);

  ASSERT_FALSE(log->remove(jobs[0].id, &lsn));
  const JobLogStats s2 = log->stats();
  EXPECT_EQ(s2.live_bytes, 2 * put_size);
  EXPECT_GT(s2.dead_bytes, s1.dead_bytes + put_size) << "the put and the delete record are dead";
  EXPECT_EQ(s2.dead_bytes + s2.live_bytes, s2.total_bytes);

  // Churn: many puts deleted again, so dead bytes pile up until compaction takes them back.
  std::uint64_t peak_dead = 0;
  for (int i = 0; i < 400; ++i) {
    PutRecord j = job(*log, 200);
    ASSERT_FALSE(log->put(j, &lsn));
    ASSERT_FALSE(log->remove(j.id, &lsn));
    log->commit();
    peak_dead = std::max(peak_dead, log->stats().dead_bytes);
    log->poll(0);
  }
  const JobLogStats s3 = log->stats();
  EXPECT_EQ(s3.live_bytes, 2 * put_size) << "churn leaves the live jobs' bytes as they were";
  EXPECT_GT(s3.compacted_segments, 0u);
  EXPECT_LT(s3.dead_bytes, peak_dead) << "compaction gave dead bytes back";
  EXPECT_LE(s3.total_bytes, 2 * s3.live_bytes + 2 * o.segment_bytes);
  EXPECT_EQ(s3.dead_bytes + s3.live_bytes, s3.total_bytes);
}

}  // namespace
}  // namespace wheel::jobs
