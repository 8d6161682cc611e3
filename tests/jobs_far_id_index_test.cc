// SPDX-License-Identifier: Apache-2.0
// FarIdIndex (wheel/jobs/log/far_id_index.h): the sparse id index of a far segment. Segments are
// written here in the log's own framing (log_format.h, record_codec.h) on the fault-injecting
// file system: round trip through the side file, lookups of first, last and missing ids, records
// across 64 KiB boundaries, a torn, missing or flipped side file rebuilt from the segment, lost
// unsynced writes, a crash while persisting.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "log_format.h"
#include "record_codec.h"
#include "support/fault_injection_fs.h"
#include "wheel/jobs/log/far_id_index.h"

namespace wheel::jobs {
namespace {

using testing::FaultInjectionFs;

constexpr const char* kSegment = "/far/00000000000000000001.wjf";
constexpr const char* kSide = "/far/00000000000000000001.wji";

FarIdIndexOptions options(FaultInjectionFs& fs) {
  FarIdIndexOptions o;
  o.segment_path = kSegment;
  o.index_path = kSide;
  o.fs = &fs;
  return o;
}

// A far segment as the log writes it (a segment-start record, then puts), with its index built
// as the records are appended.
struct Segment {
  explicit Segment(FaultInjectionFs& f) : fs(f), index(options(f)) {
    EXPECT_FALSE(fs.create_dir("/far"));
    EXPECT_FALSE(fs.open_append(kSegment, &file));
    std::string rec;
    log::append_record(&rec, log::RecordType::kSegmentStart,
                       codec::encode_segment_start({1, 1, 42}));
    write(rec);
  }
  void put(std::uint64_t id, std::size_t body) {
    PutRecord job;
    job.id = id;
    job.state = StoredState::kDelayed;
    job.due_unix_ms = 1'800'000'000'000 + static_cast<std::int64_t>(id);
    job.ttr_ms = 60'000;
    job.tube = "far";
    job.body.assign(body, static_cast<char>('a' + id % 26));
    std::string rec;
    log::append_record(&rec, log::RecordType::kPut, codec::encode_put(job));
    index.note_put(id, size, rec.size());
    offsets[id] = size;
    write(rec);
  }
  void write(const std::string& rec) {
    ASSERT_FALSE(file->append(std::as_bytes(std::span(rec.data(), rec.size()))));
    size += rec.size();
  }
  void sync() { ASSERT_FALSE(file->sync()); }

  FaultInjectionFs& fs;
  std::unique_ptr<WritableFile> file;
  FarIdIndex index;
  std::uint64_t size = 0;
  std::map<std::uint64_t, std::uint64_t> offsets;  // id -> offset of its put
};

std::unique_ptr<FarIdIndex> reopen(FaultInjectionFs& fs, FarIdRecovered* r) {
  std::string error;
  auto index = FarIdIndex::open(options(fs), r, &error);
  EXPECT_TRUE(index) << error;
  return index;
}

// Looks every id up and checks the record found is that job's put.
void expect_all_found(const FarIdIndex& index, const std::map<std::uint64_t, std::uint64_t>& ids) {
  for (const auto& [id, offset] : ids) {
    FarIdHit hit;
    ASSERT_FALSE(index.lookup(id, &hit)) << id;
    ASSERT_TRUE(hit.found) << id;
    EXPECT_EQ(hit.offset, offset) << id;
    PutRecord job;
    ASSERT_TRUE(codec::decode_put(hit.payload, &job));
    EXPECT_EQ(job.id, id);
  }
}

bool same_blocks(const FarIdIndex& a, const FarIdIndex& b) {
  if (a.blocks().size() != b.blocks().size()) return false;
  for (std::size_t i = 0; i < a.blocks().size(); ++i) {
    if (a.blocks()[i].first_id != b.blocks()[i].first_id ||
        a.blocks()[i].offset != b.blocks()[i].offset) {
      return false;
    }
  }
  return a.last_id() == b.last_id() && a.end() == b.end();
}

// 600 puts of 500 bytes (about 5 blocks of 64 KiB), synced, and with `save` the side file.
void fill_600(Segment& seg, bool save = false) {
  for (std::uint64_t id = 1; id <= 600; ++id) seg.put(id, 500);
  seg.sync();
  if (save) {
    ASSERT_FALSE(seg.index.persist(seg.size));
  }
}

TEST(FarIdIndexTest, RoundTripReadsTheSideFileAndOnlyTheLastBlock) {
  FaultInjectionFs fs;
  Segment seg(fs);
  std::mt19937_64 rng(1);
  for (std::uint64_t id = 100; id < 2100; ++id) seg.put(id, 50 + rng() % 3000);
  seg.sync();
  ASSERT_FALSE(seg.index.persist(seg.size));
  EXPECT_GT(seg.index.blocks().size(), 40u);

  FarIdRecovered r;
  auto index = reopen(fs, &r);
  ASSERT_TRUE(index);
  EXPECT_TRUE(r.from_side_file);
  EXPECT_FALSE(r.rebuilt);
  EXPECT_LE(r.scanned_bytes, FarIdIndex::kBlockBytes + 4096);  // the last block, not the segment
  EXPECT_TRUE(same_blocks(*index, seg.index));
  expect_all_found(*index, seg.offsets);
}

TEST(FarIdIndexTest, FirstLastAndMissingIdsWithOneBoundedRead) {
  FaultInjectionFs fs;
  Segment seg(fs);
  for (std::uint64_t id = 1000; id <= 5000; id += 2) seg.put(id, 200);  // even ids only
  seg.sync();
  ASSERT_FALSE(seg.index.persist(seg.size));
  FarIdRecovered r;
  auto index = reopen(fs, &r);
  ASSERT_TRUE(index);
  EXPECT_EQ(index->first_id(), 1000u);
  EXPECT_EQ(index->last_id(), 5000u);

  for (std::uint64_t id : {1000u, 5000u, 3000u}) {
    const auto reads = fs.positional_reads();
    FarIdHit hit;
    ASSERT_FALSE(index->lookup(id, &hit));
    EXPECT_TRUE(hit.found) << id;
    EXPECT_EQ(hit.offset, seg.offsets[id]);
    EXPECT_EQ(fs.positional_reads() - reads, 1u) << id;
  }
  for (std::uint64_t id : {1001u, 4999u, 3001u}) {  // inside the range: one read says no
    const auto reads = fs.positional_reads();
    FarIdHit hit;
    ASSERT_FALSE(index->lookup(id, &hit));
    EXPECT_FALSE(hit.found) << id;
    EXPECT_EQ(fs.positional_reads() - reads, 1u) << id;
  }
  for (std::uint64_t id : {0u, 999u, 5001u, 1u << 30}) {  // outside: no read at all
    const auto reads = fs.positional_reads();
    FarIdHit hit;
    ASSERT_FALSE(index->lookup(id, &hit));
    EXPECT_FALSE(hit.found) << id;
    EXPECT_EQ(fs.positional_reads(), reads) << id;
  }
}

TEST(FarIdIndexTest, IdsAcrossBlockBoundaries) {
  FaultInjectionFs fs;
  Segment seg(fs);
  // Records that cross 64 KiB boundaries, some larger than a block (a block with no put of its
  // own), some tiny.
  const std::size_t sizes[] = {40'000, 70'000, 10, 65'536, 30'000, 200'000, 5, 64'000, 1'000};
  std::uint64_t id = 7;
  for (int round = 0; round < 4; ++round) {
    for (std::size_t s : sizes) seg.put(id++, s);
  }
  seg.sync();
  ASSERT_FALSE(seg.index.persist(seg.size));
  expect_all_found(seg.index, seg.offsets);
  FarIdRecovered r;
  auto index = reopen(fs, &r);
  ASSERT_TRUE(index);
  EXPECT_TRUE(r.from_side_file);
  EXPECT_TRUE(same_blocks(*index, seg.index));
  for (const auto& [i, offset] : seg.offsets) {
    const auto reads = fs.positional_reads();
    FarIdHit hit;
    ASSERT_FALSE(index->lookup(i, &hit)) << i;
    ASSERT_TRUE(hit.found) << i;
    EXPECT_EQ(hit.offset, offset);
    EXPECT_LE(fs.positional_reads() - reads, 3u) << i;  // a block, then a whole record
  }
  FarIdHit hit;
  ASSERT_FALSE(index->lookup(id, &hit));  // one past the last
  EXPECT_FALSE(hit.found);
}

// A side file that cannot be trusted is rebuilt from the whole segment, to the same blocks.
void expect_rebuilt(FaultInjectionFs& fs, Segment& seg, const std::string& why) {
  FarIdRecovered r;
  auto index = reopen(fs, &r);
  ASSERT_TRUE(index);
  EXPECT_TRUE(r.rebuilt);
  EXPECT_FALSE(r.from_side_file);
  EXPECT_NE(r.why_rebuilt.find(why), std::string::npos) << r.why_rebuilt;
  EXPECT_EQ(r.scanned_bytes, seg.size);
  EXPECT_TRUE(same_blocks(*index, seg.index));
  expect_all_found(*index, seg.offsets);
}

TEST(FarIdIndexTest, AMissingSideFileIsRebuiltFromTheSegment) {
  FaultInjectionFs fs;
  Segment seg(fs);
  fill_600(seg);
  expect_rebuilt(fs, seg, "missing");
}

TEST(FarIdIndexTest, ATornSideFileIsRebuilt) {
  FaultInjectionFs fs;
  Segment seg(fs);
  ASSERT_NO_FATAL_FAILURE(fill_600(seg, true));
  const std::string whole = fs.contents(kSide);
  for (std::size_t keep : {whole.size() - 1, whole.size() - 16, std::size_t{20}, std::size_t{3}}) {
    fs.set_contents(kSide, whole.substr(0, keep));
    expect_rebuilt(fs, seg, keep < 32 ? "short" : "length");
  }
}

TEST(FarIdIndexTest, AFlippedBitInTheSideFileIsRebuilt) {
  FaultInjectionFs fs;
  Segment seg(fs);
  ASSERT_NO_FATAL_FAILURE(fill_600(seg, true));
  const std::string whole = fs.contents(kSide);
  // The lowest bit of a middle block's first id: the blocks would still be in order.
  std::string flipped = whole;
  flipped[8 + 24 + 2 * 16] ^= 1;
  fs.set_contents(kSide, flipped);
  expect_rebuilt(fs, seg, "checksum");
}

TEST(FarIdIndexTest, AFlippedBitInTheSegmentIsAnErrorNeverARecord) {
  FaultInjectionFs fs;
  Segment seg(fs);
  ASSERT_NO_FATAL_FAILURE(fill_600(seg, true));
  std::string data = fs.contents(kSegment);
  data[seg.offsets[100] + 40] ^= 4;  // in job 100's put
  fs.set_contents(kSegment, data);
  FarIdRecovered r;
  auto index = reopen(fs, &r);  // the side file is trusted: the damage is not in the last block
  ASSERT_TRUE(index);
  EXPECT_TRUE(r.from_side_file);
  FarIdHit hit;
  EXPECT_EQ(index->lookup(100, &hit), std::errc::illegal_byte_sequence);
  EXPECT_FALSE(hit.found);
  ASSERT_FALSE(index->lookup(500, &hit));  // another block reads fine
  EXPECT_TRUE(hit.found);
}

// The side file is persisted for the synced part of the segment only; a power cut then loses
// the unsynced puts (keeping a torn part of them). The side file must still be trusted (it names
// nothing past what the segment kept), every synced id found, and no lost one.
TEST(FarIdIndexTest, LostUnsyncedWritesNeverLeaveTheIndexPointingPastTheSegment) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    SCOPED_TRACE(seed);
    std::mt19937_64 rng(seed);
    FaultInjectionFs fs;
    Segment seg(fs);
    std::uint64_t id = 1;
    for (int i = 0; i < 300 + static_cast<int>(rng() % 300); ++i) seg.put(id++, 100 + rng() % 2000);
    seg.sync();
    const std::uint64_t synced = seg.size;
    const std::uint64_t last_synced = id - 1;
    for (int i = 0; i < 100 + static_cast<int>(rng() % 200); ++i) seg.put(id++, 100 + rng() % 2000);
    ASSERT_FALSE(seg.index.persist(synced));
    fs.power_loss(rng, /*torn=*/seed % 2 == 0);
    std::uint64_t on_disk = 0;
    ASSERT_FALSE(fs.file_size(kSegment, &on_disk));
    ASSERT_GE(on_disk, synced);

    FarIdRecovered r;
    auto index = reopen(fs, &r);
    ASSERT_TRUE(index);
    EXPECT_TRUE(r.from_side_file) << r.why_rebuilt;
    EXPECT_LE(index->end(), on_disk);
    for (const auto& b : index->blocks()) EXPECT_LT(b.offset, on_disk);
    for (const auto& [i, offset] : seg.offsets) {
      FarIdHit hit;
      ASSERT_FALSE(index->lookup(i, &hit)) << i;
      if (i <= last_synced) {
        ASSERT_TRUE(hit.found) << i;
        EXPECT_EQ(hit.offset, offset);
      } else if (hit.found) {  // a whole record the cut kept
        EXPECT_EQ(hit.offset, offset);
        EXPECT_LE(offset + hit.size, on_disk);
      }
    }
  }
}

TEST(FarIdIndexTest, AnOpenSegmentsTailIsIndexedFromTheSideFilesLastBlock) {
  FaultInjectionFs fs;
  Segment seg(fs);
  for (std::uint64_t id = 1; id <= 400; ++id) seg.put(id, 700);
  seg.sync();
  ASSERT_FALSE(seg.index.persist(seg.size));
  const std::uint64_t persisted = seg.size;
  for (std::uint64_t id = 401; id <= 800; ++id) seg.put(id, 700);
  seg.sync();
  FarIdRecovered r;
  auto index = reopen(fs, &r);
  ASSERT_TRUE(index);
  EXPECT_TRUE(r.from_side_file);
  EXPECT_LE(r.scanned_bytes, seg.size - persisted + FarIdIndex::kBlockBytes + 1024);
  EXPECT_TRUE(same_blocks(*index, seg.index));
  expect_all_found(*index, seg.offsets);
}

// A power cut or a kill -9 at any step of persist() leaves the old side file or the new one
// whole.
TEST(FarIdIndexTest, ACrashWhilePersistingLeavesOneWholeSideFile) {
  for (std::uint64_t cut = 1; cut <= 12; ++cut) {
    SCOPED_TRACE(cut);
    const bool power_cut = cut % 2 == 0;
    std::mt19937_64 rng(cut);
    FaultInjectionFs fs;
    Segment seg(fs);
    for (std::uint64_t id = 1; id <= 300; ++id) seg.put(id, 500);
    seg.sync();
    ASSERT_FALSE(seg.index.persist(seg.size));
    for (std::uint64_t id = 301; id <= 600; ++id) seg.put(id, 500);
    seg.sync();
    fs.set_ops_until_crash((cut + 1) / 2);
    const bool failed = static_cast<bool>(seg.index.persist(seg.size));
    if (power_cut) {
      fs.power_loss(rng, /*torn=*/true);
    } else {
      fs.process_death();
    }
    FarIdRecovered r;
    auto index = reopen(fs, &r);
    ASSERT_TRUE(index);
    EXPECT_TRUE(r.from_side_file) << r.why_rebuilt << (failed ? " (persist failed)" : "");
    EXPECT_TRUE(same_blocks(*index, seg.index));
  }
}

}  // namespace
}  // namespace wheel::jobs
