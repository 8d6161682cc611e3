// SPDX-License-Identifier: Apache-2.0
// JobLog::open() tells damage from a torn tail: only the unsynced end of the newest segment
// may be cut; a damaged start record with records after it, a missing segment, are refused
// naming the file; a segment torn at birth (a crash inside start_segment) still starts; and no
// cut or skip ever lets an acknowledged id be handed out again (the id lease file).
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "support/fault_injection_fs.h"
#include "support/job_log_on_fs.h"
#include "wheel/jobs/log/job_log.h"
#include "wheel/logger.h"

namespace wheel::jobs {
namespace {

std::string segment_name(std::uint64_t number) {
  char name[32];
  std::snprintf(name, sizeof name, "%020llu.wjl", static_cast<unsigned long long>(number));
  return name;
}

class LogDamageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    logger()->set_level(spdlog::level::off);
    char tmpl[] = "/tmp/jobs_log_damage_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::filesystem::remove_all(dir_);
    logger()->set_level(spdlog::level::info);
  }

  JobLogOptions options(bool skip_corrupt = false) {
    JobLogOptions o;
    o.dir = dir_ + "/log";
    o.reserve_bytes = 4096;
    o.skip_corrupt = skip_corrupt;
    return o;
  }
  std::string segment(std::uint64_t number) { return dir_ + "/log/" + segment_name(number); }

  // One session: opens the log (which starts a segment of its own), puts `n` jobs, each
  // acknowledged (synced), and closes it cleanly. Returns the highest id.
  std::uint64_t session(int n) {
    Recovered r;
    std::string error;
    auto log = JobLog::open(options(), &r, &error);
    EXPECT_TRUE(log) << error;
    if (!log) return 0;
    for (int i = 0; i < n; ++i) {
      PutRecord job;
      EXPECT_FALSE(log->allocate_id(&job.id));
      job.tube = "default";
      job.ttr_ms = 60'000;
      job.body = "job " + std::to_string(job.id);
      JobLog::Lsn lsn = 0;
      EXPECT_FALSE(log->put(job, &lsn));
      max_id_ = std::max(max_id_, job.id);
    }
    EXPECT_FALSE(log->sync_now());
    return max_id_;
  }
  void flip(const std::string& path, std::uint64_t offset) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(offset));
    const char c = static_cast<char>(f.get());
    f.seekp(static_cast<std::streamoff>(offset));
    f.put(static_cast<char>(c ^ 0x20));
  }
  // The id the next put gets after a start with `o`.
  std::uint64_t next_id_after_start(const JobLogOptions& o, Recovered* r) {
    std::string error;
    auto log = JobLog::open(o, r, &error);
    EXPECT_TRUE(log) << error;
    std::uint64_t id = 0;
    if (log) {
      EXPECT_FALSE(log->allocate_id(&id));
    }
    return id;
  }

  std::string dir_;
  std::uint64_t max_id_ = 0;
};

TEST_F(LogDamageTest, AFlippedByteInTheNewestSegmentsFirstRecordStopsTheStart) {
  // The audit's case: after a clean stop, one flipped byte in the start record of the newest
  // segment was taken for a torn tail at offset 0, and the segment (20 acknowledged jobs) cut.
  session(40);
  session(20);
  flip(segment(2), 12);
  Recovered r;
  std::string error;
  EXPECT_FALSE(JobLog::open(options(), &r, &error));
  EXPECT_NE(error.find("corrupt record in " + segment(2) + " at byte offset 0"), std::string::npos)
      << error;
  EXPECT_TRUE(std::filesystem::exists(segment(2))) << "nothing was cut";
}

TEST_F(LogDamageTest, SkippingADamagedStartRecordKeepsTheSegmentsJobsAndNeverRepeatsAnId) {
  session(40);
  const std::uint64_t acknowledged = session(20);
  flip(segment(2), 12);
  Recovered r;
  const std::uint64_t id = next_id_after_start(options(/*skip_corrupt=*/true), &r);
  EXPECT_GT(id, acknowledged) << "an acknowledged id handed out again";
  EXPECT_EQ(r.jobs.size(), 60u) << "the records after the damaged start record count";
  EXPECT_GT(r.skipped_bytes, 0u);
}

TEST_F(LogDamageTest, ACutTheStartCannotTellFromACrashNeverRepeatsAnId) {
  // A newest segment cut back inside its start record looks exactly like a segment torn at
  // birth: its jobs are lost, but the id lease file still covers their ids.
  session(40);
  const std::uint64_t acknowledged = session(20);
  std::filesystem::resize_file(segment(2), 30);
  Recovered r;
  const std::uint64_t id = next_id_after_start(options(), &r);
  EXPECT_EQ(r.jobs.size(), 40u);
  EXPECT_GT(r.torn_bytes, 0u);
  EXPECT_GT(id, acknowledged) << "an acknowledged id handed out again";
}

TEST_F(LogDamageTest, AMissingMiddleSegmentStopsTheStartNamingIt) {
  session(20);
  session(20);
  const std::uint64_t acknowledged = session(20);
  std::filesystem::remove(segment(2));
  Recovered r;
  std::string error;
  EXPECT_FALSE(JobLog::open(options(), &r, &error));
  EXPECT_NE(error.find("segment " + segment(2) + " is missing"), std::string::npos) << error;
  // The operator's explicit choice: start without it; the ids still never repeat.
  const std::uint64_t id = next_id_after_start(options(/*skip_corrupt=*/true), &r);
  EXPECT_EQ(r.jobs.size(), 40u);
  EXPECT_GT(id, acknowledged);
}

TEST_F(LogDamageTest, ASegmentTornAtBirthStillStarts) {
  // A crash inside start_segment, before its sync: the newest file holds part of its start
  // record, or all of it garbled, and nothing after it.
  session(20);
  std::string start;
  {
    std::ifstream f(segment(1), std::ios::binary);
    start.resize(41);  // a start record: 9 bytes of header, 32 of payload
    f.read(start.data(), 41);
  }
  for (std::size_t keep : {std::size_t{0}, std::size_t{7}, std::size_t{30}, std::size_t{41}}) {
    { std::ofstream(segment(2), std::ios::binary) << start.substr(0, keep); }
    if (keep == 41) flip(segment(2), 20);
    Recovered r;
    std::string error;
    auto log = JobLog::open(options(), &r, &error);
    ASSERT_TRUE(log) << keep << " bytes: " << error;
    EXPECT_EQ(r.jobs.size(), 20u) << keep;
    EXPECT_EQ(r.torn_bytes, keep) << keep;
    EXPECT_EQ(r.segments, 1u) << keep;
    log.reset();
    std::filesystem::remove(segment(2));  // the head the start made
  }
}

TEST_F(LogDamageTest, EveryCutPointOfStartsAndRotationsComesBack) {
  // The crash model, exhaustively over a small workload: each file operation in turn is the
  // last (the power goes, keeping a random, partly garbled part of what was not synced); the
  // log must start again with every acknowledged job, and ids must not repeat.
  auto run = [](testing::FaultInjectionFs& fs, std::uint64_t* acked_max, int* acked_jobs) {
    Recovered r;
    std::string error;
    auto log = JobLog::open(testing::log_options(fs, 4096), &r, &error);
    if (!log) return;
    for (int i = 0; i < 30; ++i) {
      PutRecord job;
      if (log->allocate_id(&job.id)) return;
      job.tube = "t";
      job.body = std::string(300, 'x');
      JobLog::Lsn lsn = 0;
      if (log->put(job, &lsn)) return;
      log->commit();  // kAlways, inline: durable when it returns
      if (log->durable_lsn() < lsn) return;
      *acked_max = job.id;
      ++*acked_jobs;
    }
  };
  testing::FaultInjectionFs dry;
  std::uint64_t max = 0;
  int jobs = 0;
  run(dry, &max, &jobs);
  ASSERT_EQ(jobs, 30);
  std::mt19937_64 rng(36);
  for (std::uint64_t cut = 1; cut <= dry.ops(); ++cut) {
    testing::FaultInjectionFs fs;
    fs.set_ops_until_crash(cut);
    std::uint64_t acked_max = 0;
    int acked_jobs = 0;
    run(fs, &acked_max, &acked_jobs);
    fs.power_loss(rng, /*torn=*/true);
    Recovered r;
    std::string error;
    auto log = JobLog::open(testing::log_options(fs, 4096), &r, &error);
    ASSERT_TRUE(log) << "cut at operation " << cut << ": " << error;
    EXPECT_GE(r.jobs.size(), static_cast<std::size_t>(acked_jobs)) << "cut " << cut;
    std::uint64_t id = 0;
    ASSERT_FALSE(log->allocate_id(&id));
    EXPECT_GT(id, acked_max) << "cut " << cut;
  }
}

}  // namespace
}  // namespace wheel::jobs
