// SPDX-License-Identifier: Apache-2.0
// FarSegmentWriter (wheel/jobs/log/far_segment.h): a far segment's puts written in the log's
// framing and read back by id through its sparse index; a power cut or a failed append never
// leaves the index naming bytes the segment does not hold.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "support/fault_injection_fs.h"
#include "wheel/jobs/log/far_segment.h"

namespace wheel::jobs {
namespace {

using testing::FaultInjectionFs;

FarSegmentOptions options(FaultInjectionFs& fs) {
  FarSegmentOptions o;
  o.dir = "/far";
  o.number = 7;
  o.fs = &fs;
  return o;
}

PutRecord job(std::uint64_t id, std::size_t body) {
  PutRecord j;
  j.id = id;
  j.state = StoredState::kDelayed;
  j.priority = static_cast<std::uint32_t>(id % 1000);
  j.due_unix_ms = 1'800'000'000'000 + static_cast<std::int64_t>(id) * 1000;
  j.created_unix_ms = 1'700'000'000'000;
  j.counters.delay_ms = j.due_unix_ms - j.created_unix_ms;
  j.ttr_ms = 30'000;
  j.tube = "far-" + std::to_string(id % 5);
  j.body.assign(body, static_cast<char>('A' + id % 26));
  return j;
}

std::unique_ptr<FarSegmentWriter> create(FaultInjectionFs& fs) {
  EXPECT_FALSE(fs.create_dir("/far"));
  std::string error;
  auto writer = FarSegmentWriter::create(options(fs), &error);
  EXPECT_TRUE(writer) << error;
  return writer;
}

// The segment's id index as a restart opens it.
std::unique_ptr<FarIdIndex> open_index(FaultInjectionFs& fs, FarIdRecovered* r,
                                       std::string* error) {
  const FarIdIndexOptions io{FarSegmentWriter::segment_path(options(fs)),
                             FarSegmentWriter::index_path(options(fs)), &fs};
  return FarIdIndex::open(io, r, error);
}

TEST(FarSegmentTest, PutsAreReadBackByIdAndTheSideFileIsTrusted) {
  FaultInjectionFs fs;
  auto writer = create(fs);
  ASSERT_TRUE(writer);
  std::mt19937_64 rng(3);
  std::map<std::uint64_t, PutRecord> jobs;
  for (std::uint64_t id = 50; id < 1050; id += 1 + rng() % 3) {
    jobs[id] = job(id, rng() % 5000);
    ASSERT_FALSE(writer->append(jobs[id], nullptr));
  }
  ASSERT_FALSE(writer->sync());
  EXPECT_EQ(writer->synced_bytes(), writer->size());
  for (std::uint64_t id = 40; id < 1060; ++id) {
    PutRecord got;
    bool found = false;
    ASSERT_FALSE(writer->read(id, &got, &found)) << id;
    ASSERT_EQ(found, jobs.count(id) == 1) << id;
    if (found) {
      EXPECT_EQ(got, jobs[id]);
    }
  }
  FarIdRecovered r;
  std::string error;
  auto index = open_index(fs, &r, &error);
  ASSERT_TRUE(index) << error;
  EXPECT_TRUE(r.from_side_file) << r.why_rebuilt;
  EXPECT_EQ(index->blocks().size(), writer->index().blocks().size());
}

TEST(FarSegmentTest, AnExistingSegmentIsNotOverwritten) {
  FaultInjectionFs fs;
  auto writer = create(fs);
  ASSERT_TRUE(writer);
  std::string error;
  EXPECT_FALSE(FarSegmentWriter::create(options(fs), &error));
  EXPECT_NE(error.find(".wjf"), std::string::npos) << error;
}

// A power cut or kill -9 at every step of a sync(): the side file left is trusted (it names only
// synced bytes), and every put synced before the cut is read back.
TEST(FarSegmentTest, ACutInASyncLeavesATrustedIndexOfTheSyncedPuts) {
  for (std::uint64_t cut = 1; cut <= 20; ++cut) {  // past the last operation of a sync
    SCOPED_TRACE(cut);
    std::mt19937_64 rng(cut);
    FaultInjectionFs fs;
    auto writer = create(fs);
    ASSERT_TRUE(writer);
    std::uint64_t id = 1;
    for (; id <= 300; ++id) ASSERT_FALSE(writer->append(job(id, 400), nullptr));
    ASSERT_FALSE(writer->sync());
    for (; id <= 600; ++id) ASSERT_FALSE(writer->append(job(id, 400), nullptr));
    fs.set_ops_until_crash((cut + 1) / 2);
    writer->sync();
    if (cut % 2 == 0) {
      fs.power_loss(rng, /*torn=*/true);
    } else {
      fs.process_death();
    }
    FarIdRecovered r;
    std::string error;
    auto index = open_index(fs, &r, &error);
    ASSERT_TRUE(index) << error;
    EXPECT_TRUE(r.from_side_file) << r.why_rebuilt;
    for (std::uint64_t i = 1; i <= 300; ++i) {
      FarIdHit hit;
      ASSERT_FALSE(index->lookup(i, &hit)) << i;
      EXPECT_TRUE(hit.found) << i;
    }
  }
}

TEST(FarSegmentTest, AFailedAppendIsCutBackSoTheNextPutReadsBack) {
  FaultInjectionFs fs;
  auto writer = create(fs);
  ASSERT_TRUE(writer);
  ASSERT_FALSE(writer->append(job(1, 100), nullptr));
  fs.set_capacity(fs.used_bytes() + 300);  // room for part of the next put only
  EXPECT_EQ(writer->append(job(2, 1000), nullptr), std::errc::no_space_on_device);
  EXPECT_FALSE(writer->failed());
  fs.set_capacity(UINT64_MAX);
  ASSERT_FALSE(writer->append(job(3, 100), nullptr));
  ASSERT_FALSE(writer->sync());
  for (std::uint64_t id : {1u, 3u}) {
    PutRecord got;
    bool found = false;
    ASSERT_FALSE(writer->read(id, &got, &found)) << id;
    ASSERT_TRUE(found) << id;
    EXPECT_EQ(got, job(id, 100));
  }
  PutRecord got;
  bool found = true;
  ASSERT_FALSE(writer->read(2, &got, &found));
  EXPECT_FALSE(found);
}

}  // namespace
}  // namespace wheel::jobs
