// SPDX-License-Identifier: Apache-2.0
// TimeIndex (wheel/jobs/log/time_index.h) on the fault-injecting file system: entries read back
// per bucket in due order after a reopen, gones applied, nothing written before its record is
// durable, what a crash leaves past the checkpoint cut off, lost or damaged synced data
// reported, dropped buckets gone for good. The power-loss rounds beside a real JobLog are in
// jobs_time_index_power_loss_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

#include "support/fault_injection_fs.h"
#include "wheel/jobs/log/time_index.h"

namespace wheel::jobs {
namespace {

using testing::FaultInjectionFs;

constexpr std::uint64_t kBucketMs = 60'000;
constexpr std::int64_t kBase = 1'800'000'000'000;  // a due time in 2027, a bucket's start

// journal_entries 1: every flush splits its journal into the bucket files at once, so these
// tests see the bucket files; jobs_time_index_journal_test.cc keeps entries in the journal.
TimeIndexOptions options(FaultInjectionFs& fs, std::uint64_t journal_entries = 1) {
  TimeIndexOptions o;
  o.dir = "/tix";
  o.fs = &fs;
  o.bucket_ms = kBucketMs;
  o.journal_entries = journal_entries;
  return o;
}

std::unique_ptr<TimeIndex> open_index(FaultInjectionFs& fs, TimeIndexRecovered* r = nullptr,
                                      std::uint64_t journal_entries = 1) {
  TimeIndexRecovered scratch;
  std::string error;
  auto index = TimeIndex::open(options(fs, journal_entries), r != nullptr ? r : &scratch, &error);
  EXPECT_TRUE(index) << error;
  return index;
}

// Each file operation is cut twice: cut 2k - 1 stops at operation k and the power goes (torn
// tails), cut 2k stops there and only the process dies (kill -9: the page cache stays).
std::uint64_t op_of(std::uint64_t cut) {
  return (cut + 1) / 2;
}
void crash(FaultInjectionFs& fs, std::uint64_t cut) {
  if (cut % 2 == 0) {
    fs.process_death();
    return;
  }
  std::mt19937_64 rng(cut);
  fs.power_loss(rng, true);
}

std::vector<TimeEntry> read(const TimeIndex& index, std::uint64_t bucket) {
  std::vector<TimeEntry> out;
  EXPECT_FALSE(index.read_bucket(bucket, &out));
  return out;
}

std::vector<std::uint64_t> ids(const std::vector<TimeEntry>& entries) {
  std::vector<std::uint64_t> out;
  for (const auto& e : entries) out.push_back(e.id);
  return out;
}

TEST(TimeIndexTest, EntriesSurviveAReopenByBucket) {
  FaultInjectionFs fs;
  const std::uint64_t b0 = kBase / kBucketMs;
  {
    auto index = open_index(fs);
    for (std::uint64_t id = 1; id <= 30; ++id) {
      const std::int64_t due = kBase + static_cast<std::int64_t>((id % 3) * kBucketMs + id);
      index->add({due, id, id * 1000}, id);
    }
    EXPECT_EQ(index->live(), 30u);
    EXPECT_EQ(index->live_in(b0 + 1), 10u);
    ASSERT_FALSE(index->flush(30, 777));
    EXPECT_EQ(index->staged(), 0u);
  }
  TimeIndexRecovered r;
  auto index = open_index(fs, &r);
  EXPECT_EQ(r.replay_from, 777u);
  EXPECT_EQ(r.buckets, 3u);
  EXPECT_EQ(r.live, 30u);
  EXPECT_EQ(r.cut_bytes, 0u);
  for (std::uint64_t k = 0; k < 3; ++k) {
    const auto entries = read(*index, b0 + k);
    ASSERT_EQ(entries.size(), 10u);
    for (const auto& e : entries) {
      EXPECT_EQ(e.id % 3, k);
      EXPECT_EQ(e.log_ref, e.id * 1000);
      EXPECT_EQ(index->bucket_of(e.due_unix_ms), b0 + k);
    }
  }
  EXPECT_TRUE(read(*index, b0 + 7).empty());
}

TEST(TimeIndexTest, ABucketReadsInDueOrderWithGonesApplied) {
  FaultInjectionFs fs;
  std::mt19937_64 rng(33);
  const std::uint64_t bucket = kBase / kBucketMs;
  std::map<std::pair<std::int64_t, std::uint64_t>, bool> want;  // (due, id) -> live
  auto index = open_index(fs);
  std::uint64_t lsn = 0;
  std::vector<std::pair<std::int64_t, std::uint64_t>> added;
  for (std::uint64_t id = 1; id <= 500; ++id) {
    const std::int64_t due = kBase + static_cast<std::int64_t>(rng() % kBucketMs);  // any order
    index->add({due, id, id}, ++lsn);
    added.emplace_back(due, id);
    want[{due, id}] = true;
    if (id == 250) {
      ASSERT_FALSE(index->flush(lsn, 0));  // half on disk, half staged
    }
  }
  for (int i = 0; i < 120; ++i) {  // gones of flushed and of staged puts, some flushed
    const auto pick = added[rng() % added.size()];
    if (!want[pick]) continue;
    index->remove(pick.first, pick.second, ++lsn);
    want[pick] = false;
    if (i == 60) {
      ASSERT_FALSE(index->flush(lsn, 0));
    }
  }
  std::vector<std::uint64_t> expect;
  for (const auto& [key, live] : want) {
    if (live) expect.push_back(key.second);
  }
  EXPECT_EQ(ids(read(*index, bucket)), expect);
  EXPECT_EQ(index->live_in(bucket), expect.size());
  ASSERT_FALSE(index->flush(lsn, 0));
  index.reset();
  index = open_index(fs);
  EXPECT_EQ(ids(read(*index, bucket)), expect);
  EXPECT_EQ(index->live(), expect.size());
}

TEST(TimeIndexTest, AnEntryWaitsUntilItsRecordIsDurable) {
  FaultInjectionFs fs;
  const std::uint64_t bucket = kBase / kBucketMs;
  auto index = open_index(fs);
  index->add({kBase + 5, 1, 10}, 4);
  index->add({kBase + 6, 2, 20}, 5);
  ASSERT_FALSE(index->flush(4, 0));  // the log made LSN 4 durable, not 5
  EXPECT_EQ(index->staged(), 1u);
  EXPECT_EQ(fs.contents(index->bucket_path(bucket)).size(), TimeIndex::kEntrySize);
  EXPECT_EQ(ids(read(*index, bucket)), (std::vector<std::uint64_t>{1, 2}));  // staged ones too
  {
    auto again = open_index(fs);  // what a restart sees: LSN 5's entry is not on disk
    EXPECT_EQ(ids(read(*again, bucket)), (std::vector<std::uint64_t>{1}));
  }
  ASSERT_FALSE(index->flush(5, 0));
  EXPECT_EQ(fs.contents(index->bucket_path(bucket)).size(), 2 * TimeIndex::kEntrySize);
}

TEST(TimeIndexTest, WhatACrashLeftPastTheCheckpointIsCutOff) {
  FaultInjectionFs fs;
  const std::uint64_t bucket = kBase / kBucketMs;
  std::string path;
  {
    auto index = open_index(fs);
    index->add({kBase + 1, 1, 1}, 1);
    ASSERT_FALSE(index->flush(1, 0));
    path = index->bucket_path(bucket);
    // A later flush's entries, the last one torn, and a file of a bucket it made, all written
    // before the crash that stopped it short of its checkpoint.
    std::string tail(TimeIndex::kEntrySize + 11, '\x5a');
    fs.set_contents(path, fs.contents(path) + tail);
    fs.set_contents(index->bucket_path(bucket + 3), std::string(TimeIndex::kEntrySize, '\1'));
  }
  TimeIndexRecovered r;
  auto index = open_index(fs, &r);
  EXPECT_EQ(r.cut_bytes, TimeIndex::kEntrySize + 11);
  EXPECT_EQ(r.removed_files, 1u);
  EXPECT_EQ(r.buckets, 1u);
  EXPECT_EQ(fs.contents(path).size(), TimeIndex::kEntrySize);
  EXPECT_EQ(ids(read(*index, bucket)), (std::vector<std::uint64_t>{1}));
  index->add({kBase + 2, 2, 2}, 2);  // appends after the whole entries
  ASSERT_FALSE(index->flush(2, 0));
  index.reset();
  EXPECT_EQ(ids(read(*open_index(fs), bucket)), (std::vector<std::uint64_t>{1, 2}));
}

TEST(TimeIndexTest, ACrashAtAnyStepOfAFlushKeepsOneWholeState) {
  // Journal of 1 entry: the flush splits at once (bucket files); of 1,000: it stays in the journal.
  for (std::uint64_t journal : {1, 1000})
    for (std::uint64_t cut = 1; cut < 100; ++cut) {
      FaultInjectionFs fs;
      {
        auto index = open_index(fs, nullptr, journal);
        index->add({kBase + 1, 1, 1}, 1);
        ASSERT_FALSE(index->flush(1, 0));
        index->add({kBase + 2, 2, 2}, 2);              // same bucket
        index->add({kBase + 3 * kBucketMs, 3, 3}, 3);  // a new bucket file
        index->remove(kBase + 1, 1, 4);                // a gone
        fs.set_ops_until_crash(op_of(cut));
        index->flush(4, 9);
      }
      crash(fs, cut);
      TimeIndexRecovered r;
      auto index = open_index(fs, &r, journal);
      ASSERT_TRUE(index) << "cut " << cut << " journal " << journal;
      std::vector<std::uint64_t> all;
      for (const auto& b : index->buckets()) {
        for (auto id : ids(read(*index, b.bucket))) all.push_back(id);
      }
      if (r.replay_from == 9) {
        EXPECT_EQ(all, (std::vector<std::uint64_t>{2, 3}))
            << "cut " << cut << " journal " << journal;
      } else {
        EXPECT_EQ(all, (std::vector<std::uint64_t>{1})) << "cut " << cut << " journal " << journal;
      }
      EXPECT_EQ(index->live(), all.size()) << "cut " << cut << " journal " << journal;
    }
}

TEST(TimeIndexTest, LostOrMissingSyncedBytesStopTheOpen) {
  FaultInjectionFs fs;
  std::string path;
  {
    auto index = open_index(fs);
    index->add({kBase + 1, 1, 1}, 1);
    index->add({kBase + 2, 2, 2}, 2);
    ASSERT_FALSE(index->flush(2, 0));
    path = index->bucket_path(kBase / kBucketMs);
  }
  const std::string whole = fs.contents(path);
  fs.set_contents(path, whole.substr(0, TimeIndex::kEntrySize));
  TimeIndexRecovered r;
  std::string error;
  EXPECT_FALSE(TimeIndex::open(options(fs), &r, &error));
  EXPECT_NE(error.find(path), std::string::npos) << error;
  EXPECT_NE(error.find("says 64 were synced"), std::string::npos) << error;
  ASSERT_FALSE(fs.remove(path));
  EXPECT_FALSE(TimeIndex::open(options(fs), &r, &error));
  EXPECT_NE(error.find("missing"), std::string::npos) << error;
}

TEST(TimeIndexTest, ADamagedEntryIsAnErrorNeverAnEntry) {
  FaultInjectionFs fs;
  auto index = open_index(fs);
  const std::uint64_t bucket = kBase / kBucketMs;
  for (std::uint64_t id = 1; id <= 3; ++id) index->add({kBase + 1, id, id}, id);
  ASSERT_FALSE(index->flush(3, 0));
  std::string data = fs.contents(index->bucket_path(bucket));
  data[TimeIndex::kEntrySize + 17] ^= 0x04;  // a bit of the second entry's id
  fs.set_contents(index->bucket_path(bucket), data);
  std::vector<TimeEntry> out;
  EXPECT_EQ(index->read_bucket(bucket, &out), std::errc::illegal_byte_sequence);
  EXPECT_TRUE(out.empty());
}

TEST(TimeIndexTest, ACheckpointFromAnotherBucketWidthIsRefused) {
  FaultInjectionFs fs;
  open_index(fs)->flush(0, 0);
  TimeIndexOptions o = options(fs);
  o.bucket_ms = 2 * kBucketMs;
  TimeIndexRecovered r;
  std::string error;
  EXPECT_FALSE(TimeIndex::open(o, &r, &error));
  EXPECT_NE(error.find("buckets of 60000 ms"), std::string::npos) << error;
  o.bucket_ms = 59'999;
  EXPECT_THROW(TimeIndex::open(o, &r, &error), std::invalid_argument);
}

TEST(TimeIndexTest, ADroppedBucketStaysDroppedWhereverACrashCuts) {
  for (std::uint64_t journal : {1, 1000})
    for (std::uint64_t cut = 1; cut < 80; ++cut) {
      FaultInjectionFs fs;
      const std::uint64_t bucket = kBase / kBucketMs;
      {
        auto index = open_index(fs, nullptr, journal);
        index->add({kBase + 1, 1, 1}, 1);
        index->add({kBase + 2 * kBucketMs, 2, 2}, 2);
        ASSERT_FALSE(index->flush(2, 0));
        index->add({kBase + 3, 3, 3}, 3);  // staged: dropped with its bucket
        fs.set_ops_until_crash(op_of(cut));
        const bool dropped = !index->drop_bucket(bucket);
        if (dropped) {
          EXPECT_EQ(index->live(), 1u);
          EXPECT_TRUE(read(*index, bucket).empty());
        }
      }
      crash(fs, cut);
      auto index = open_index(fs, nullptr, journal);
      ASSERT_TRUE(index) << "cut " << cut << " journal " << journal;
      const auto left = ids(read(*index, bucket));
      EXPECT_TRUE(left.empty() || left == std::vector<std::uint64_t>{1})
          << "cut " << cut << " journal " << journal;
      EXPECT_EQ(ids(read(*index, bucket + 2)), (std::vector<std::uint64_t>{2}))
          << "cut " << cut << " journal " << journal;
    }
  FaultInjectionFs fs;
  auto index = open_index(fs);
  index->add({kBase + 1, 1, 1}, 1);
  ASSERT_FALSE(index->flush(1, 0));
  ASSERT_FALSE(index->drop_bucket(kBase / kBucketMs));
  EXPECT_EQ(fs.contents(index->bucket_path(kBase / kBucketMs)), "");
  index.reset();
  EXPECT_EQ(open_index(fs)->live(), 0u);
}

}  // namespace
}  // namespace wheel::jobs
