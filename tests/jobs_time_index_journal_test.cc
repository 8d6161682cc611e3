// SPDX-License-Identifier: Apache-2.0
// TimeIndex's journal (wheel/jobs/log/time_index.h): a flush appends to one file whatever the
// buckets; the entries are read and counted from there until the journal is split into the
// bucket files; its tail is cut back like theirs, and a dropped bucket's journal entries never
// come back. jobs_time_index_test.cc has the bucket files' tests.
#include <gtest/gtest.h>

#include <random>

#include "support/fault_injection_fs.h"
#include "wheel/jobs/log/time_index.h"

namespace wheel::jobs {
namespace {

using testing::FaultInjectionFs;

constexpr std::uint64_t kBucketMs = 60'000;
constexpr std::int64_t kBase = 1'800'000'000'000;
constexpr std::uint64_t kBucket = kBase / kBucketMs;

TimeIndexOptions options(FaultInjectionFs& fs) {
  TimeIndexOptions o;
  o.dir = "/tix";
  o.fs = &fs;
  o.bucket_ms = kBucketMs;
  o.journal_entries = 100;
  return o;
}

std::unique_ptr<TimeIndex> open_index(FaultInjectionFs& fs, TimeIndexRecovered* r = nullptr) {
  TimeIndexRecovered scratch;
  std::string error;
  auto index = TimeIndex::open(options(fs), r != nullptr ? r : &scratch, &error);
  EXPECT_TRUE(index) << error;
  return index;
}

std::vector<std::uint64_t> ids(const TimeIndex& index, std::uint64_t bucket) {
  std::vector<TimeEntry> entries;
  EXPECT_FALSE(index.read_bucket(bucket, &entries));
  std::vector<std::uint64_t> out;
  for (const auto& e : entries) out.push_back(e.id);
  return out;
}

std::vector<std::uint64_t> range(std::uint64_t from, std::uint64_t to, std::uint64_t step) {
  std::vector<std::uint64_t> out;
  for (std::uint64_t v = from; v <= to; v += step) out.push_back(v);
  return out;
}

void add(TimeIndex& index, std::uint64_t from, std::uint64_t to) {
  for (std::uint64_t id = from; id <= to; ++id) {
    const auto due = kBase + static_cast<std::int64_t>((id % 3) * kBucketMs + id);
    index.add({due, id, id}, id);
  }
}

TEST(TimeIndexJournalTest, EntriesAreReadFromTheJournalUntilItIsSplit) {
  FaultInjectionFs fs;
  std::string first_journal;
  {
    auto index = open_index(fs);
    add(*index, 1, 30);
    ASSERT_FALSE(index->flush(30, 0));
    first_journal = index->journal_path();
    EXPECT_EQ(fs.contents(first_journal).size(), 30 * TimeIndex::kEntrySize);  // one file
    for (std::uint64_t k = 0; k < 3; ++k)
      EXPECT_EQ(fs.contents(index->bucket_path(kBucket + k)), "");
    EXPECT_EQ(ids(*index, kBucket + 1), range(1, 28, 3));
  }
  TimeIndexRecovered r;
  auto index = open_index(fs, &r);
  EXPECT_EQ(r.live, 30u);
  EXPECT_EQ(r.buckets, 3u);
  EXPECT_EQ(index->live_in(kBucket + 2), 10u);
  EXPECT_EQ(ids(*index, kBucket + 1), range(1, 28, 3));
  add(*index, 31, 110);  // the journal reaches 110 entries: split
  index->remove(kBase + 3, 3, 111);
  ASSERT_FALSE(index->flush(111, 0));
  EXPECT_NE(index->journal_path(), first_journal);
  EXPECT_EQ(fs.contents(first_journal), "");  // removed
  EXPECT_EQ(fs.contents(index->bucket_path(kBucket)).size(), 37 * TimeIndex::kEntrySize);
  index.reset();
  index = open_index(fs, &r);
  EXPECT_EQ(r.live, 109u);
  std::vector<std::uint64_t> want = range(6, 108, 3);
  EXPECT_EQ(ids(*index, kBucket), want);
  EXPECT_EQ(ids(*index, kBucket + 1), range(1, 109, 3));
}

TEST(TimeIndexJournalTest, ATornJournalTailIsCutAndALostOneStopsTheOpen) {
  FaultInjectionFs fs;
  std::string journal;
  {
    auto index = open_index(fs);
    add(*index, 1, 3);
    ASSERT_FALSE(index->flush(3, 0));
    journal = index->journal_path();
  }
  const std::string whole = fs.contents(journal);
  fs.set_contents(journal, whole + std::string(40, '\x33'));
  TimeIndexRecovered r;
  auto index = open_index(fs, &r);
  EXPECT_EQ(r.cut_bytes, 40u);
  EXPECT_EQ(index->live(), 3u);
  index.reset();
  fs.set_contents(journal, whole.substr(0, 2 * TimeIndex::kEntrySize));
  std::string error;
  EXPECT_FALSE(TimeIndex::open(options(fs), &r, &error));
  EXPECT_NE(error.find(journal), std::string::npos) << error;
  ASSERT_FALSE(fs.remove(journal));
  EXPECT_FALSE(TimeIndex::open(options(fs), &r, &error));
  EXPECT_NE(error.find("journal"), std::string::npos) << error;
  EXPECT_NE(error.find("missing"), std::string::npos) << error;
}

TEST(TimeIndexJournalTest, ADamagedJournalEntryIsAnErrorNeverAnEntry) {
  FaultInjectionFs fs;
  auto index = open_index(fs);
  add(*index, 1, 3);
  ASSERT_FALSE(index->flush(3, 0));
  std::string data = fs.contents(index->journal_path());
  data[2 * TimeIndex::kEntrySize + 9] ^= 0x10;  // a bit of the third entry's due time
  fs.set_contents(index->journal_path(), data);
  std::vector<TimeEntry> out;
  EXPECT_EQ(index->read_bucket(kBucket, &out), std::errc::illegal_byte_sequence);
  EXPECT_TRUE(out.empty());
}

TEST(TimeIndexJournalTest, ADroppedBucketsJournalEntriesNeverComeBack) {
  FaultInjectionFs fs;
  auto index = open_index(fs);
  index->add({kBase + 1, 1, 1}, 1);
  index->add({kBase + 2, 2, 2}, 2);
  index->add({kBase + kBucketMs, 3, 3}, 3);
  ASSERT_FALSE(index->flush(3, 0));
  ASSERT_FALSE(index->drop_bucket(kBucket));  // its entries are in the journal
  index->add({kBase + 4, 4, 4}, 4);           // the same bucket number again
  ASSERT_FALSE(index->flush(4, 0));
  EXPECT_EQ(ids(*index, kBucket), (std::vector<std::uint64_t>{4}));
  EXPECT_EQ(index->live(), 2u);
  index.reset();
  index = open_index(fs);
  EXPECT_EQ(ids(*index, kBucket), (std::vector<std::uint64_t>{4}));
  EXPECT_EQ(ids(*index, kBucket + 1), (std::vector<std::uint64_t>{3}));
  EXPECT_EQ(index->live(), 2u);
}

}  // namespace
}  // namespace wheel::jobs
