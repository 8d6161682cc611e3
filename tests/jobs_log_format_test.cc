// SPDX-License-Identifier: Apache-2.0
// CRC32C and the record framing: the reader hands out every whole record and refuses any with
// a flipped bit, a torn end or a bad length, saying where.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "crc32c.h"
#include "log_format.h"
#include "log_reader.h"
#include "record_codec.h"

namespace wheel::jobs {
namespace {

TEST(Crc32cTest, KnownVectors) {
  EXPECT_EQ(crc32c::value("123456789", 9), 0xe3069283u);
  EXPECT_EQ(crc32c::value("", 0), 0u);
  const std::string zeros(32, '\0');
  EXPECT_EQ(crc32c::value(zeros.data(), zeros.size()), 0x8a9136aau);
  EXPECT_EQ(crc32c::extend(crc32c::value("1234", 4), "56789", 5), 0xe3069283u);
}

TEST(Crc32cTest, HardwareAndTableAgree) {
  std::mt19937_64 rng(1);
  for (int i = 0; i < 200; ++i) {
    std::string s(rng() % 300, '\0');
    for (auto& c : s) c = static_cast<char>(rng());
    EXPECT_EQ(crc32c::value(s.data(), s.size()), crc32c::extend_portable(0, s.data(), s.size()));
  }
}

TEST(Crc32cTest, MaskRoundTrips) {
  for (std::uint32_t v : {0u, 1u, 0xffffffffu, 0xe3069283u}) {
    EXPECT_EQ(crc32c::unmask(crc32c::mask(v)), v);
    EXPECT_NE(crc32c::mask(v), v);
  }
}

std::string three_records() {
  std::string data;
  log::append_record(&data, log::RecordType::kDelete, codec::encode_u64(7));
  log::append_record(&data, log::RecordType::kIdLimit, codec::encode_u64(99));
  log::append_record(&data, log::RecordType::kDelete, codec::encode_u64(8));
  return data;
}

TEST(LogReaderTest, ReadsEveryRecordWithItsOffset) {
  const std::string data = three_records();
  log::Reader reader(data);
  log::Record rec;
  std::vector<std::uint64_t> offsets;
  while (reader.next(&rec) == log::Reader::Status::kRecord) offsets.push_back(rec.offset);
  EXPECT_EQ(offsets, (std::vector<std::uint64_t>{0, 17, 34}));
  EXPECT_EQ(reader.next(&rec), log::Reader::Status::kEnd);
}

TEST(LogReaderTest, EveryFlippedBitIsCaughtAtItsRecord) {
  const std::string clean = three_records();
  for (std::size_t byte = 0; byte < clean.size(); ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string data = clean;
      data[byte] = static_cast<char>(data[byte] ^ (1 << bit));
      log::Reader reader(data);
      log::Record rec;
      int good = 0;
      log::Reader::Status status;
      while ((status = reader.next(&rec)) == log::Reader::Status::kRecord) ++good;
      ASSERT_EQ(status, log::Reader::Status::kCorrupt) << "byte " << byte << " bit " << bit;
      EXPECT_EQ(reader.corrupt_offset(), byte / 17 * 17);
      EXPECT_EQ(good, static_cast<int>(byte / 17));
    }
  }
}

TEST(LogReaderTest, TruncationsStopAtTheTornRecord) {
  const std::string clean = three_records();
  for (std::size_t len = 0; len < clean.size(); ++len) {
    const std::string data = clean.substr(0, len);
    log::Reader reader(data);
    log::Record rec;
    int good = 0;
    log::Reader::Status status;
    while ((status = reader.next(&rec)) == log::Reader::Status::kRecord) ++good;
    EXPECT_EQ(good, static_cast<int>(len / 17));
    EXPECT_EQ(status, len % 17 == 0 ? log::Reader::Status::kEnd : log::Reader::Status::kCorrupt);
    if (status == log::Reader::Status::kCorrupt) {
      EXPECT_EQ(reader.corrupt_offset(), len / 17 * 17);
      EXPECT_FALSE(reader.reason().empty());
    }
  }
}

TEST(LogReaderTest, FindValidSkipsGarbageAndZeros) {
  std::string data(40, '\0');
  data += std::string(13, '\x5a');
  const std::size_t at = data.size();
  data += three_records();
  EXPECT_EQ(log::Reader::find_valid(data, 0), at);
  EXPECT_EQ(log::Reader::find_valid(std::string(100, '\0'), 0), 100u);
}

TEST(RecordCodecTest, PutRoundTripsAndRejectsWrongShapes) {
  StoredJob job{{42, StoredState::kDelayed, 7, 1'700'000'000'123, {}},
                60'000,
                1'699'999'999'000,
                "emails",
                std::string("body\0with nul", 13)};
  const std::string payload = codec::encode_put(job);
  StoredJob back;
  ASSERT_TRUE(codec::decode_put(payload, &back));
  EXPECT_EQ(back, job);
  EXPECT_EQ(codec::put_record_size(job), log::kHeaderSize + payload.size());
  EXPECT_FALSE(codec::decode_put(payload.substr(0, payload.size() - 1), &back));
  EXPECT_FALSE(codec::decode_put(payload + "x", &back));
  std::string bad_state = payload;
  bad_state[8] = 9;
  EXPECT_FALSE(codec::decode_put(bad_state, &back));
}

// Version 2 carries a job's counters (stats-job after a restart); a new job's put leaves them
// out (they follow from its due and created times), and version-1 records still read.
TEST(RecordCodecTest, CountersRideWithChangesAndWithPutsThatNeedThem) {
  StoredJob fresh{
      {7, StoredState::kDelayed, 1, 1'700'000'030'000, {}}, 1000, 1'700'000'000'000, "t", "b"};
  fresh.counters.delay_ms = 30'000;  // what the put's due time says: nothing to add
  EXPECT_FALSE(codec::put_needs_counters(fresh));
  StoredJob back;
  ASSERT_TRUE(codec::decode_put(codec::encode_put(fresh), &back));
  EXPECT_EQ(back, fresh);
  StoredJob changed = fresh;
  changed.counters = {10'000, 3, 1, 1, 0, 2};
  EXPECT_TRUE(codec::put_needs_counters(changed));
  const std::string with = codec::encode_put(changed);
  EXPECT_EQ(with.size(), codec::encode_put(fresh).size() + codec::kCountersSize);
  EXPECT_EQ(codec::put_record_size(changed), log::kHeaderSize + with.size());
  ASSERT_TRUE(codec::decode_put(with, &back));
  EXPECT_EQ(back, changed);

  StoredChange c{5, StoredState::kBuried, 100, 0, {0, 4, 2, 1, 1, 0}};
  StoredChange cb;
  bool with_counters = false;
  ASSERT_TRUE(codec::decode_change(codec::encode_change(c), &cb, &with_counters));
  EXPECT_TRUE(with_counters);
  EXPECT_EQ(cb.counters, c.counters);
  // A version-1 change: id, state, priority, due and nothing else.
  const std::string v1 = codec::encode_change(c).substr(0, 21);
  ASSERT_TRUE(codec::decode_change(v1, &cb, &with_counters));
  EXPECT_FALSE(with_counters);
  EXPECT_EQ(cb.priority, 100u);
  EXPECT_FALSE(codec::decode_change(v1 + "x", &cb));
}

TEST(RecordCodecTest, ChangeAndSegmentStartRoundTrip) {
  StoredChange c{5, StoredState::kBuried, 100, 0, {}};
  StoredChange back;
  ASSERT_TRUE(codec::decode_change(codec::encode_change(c), &back));
  EXPECT_EQ(back.id, 5u);
  EXPECT_EQ(back.state, StoredState::kBuried);
  EXPECT_EQ(back.priority, 100u);
  codec::SegmentStart s{3, 1025};
  codec::SegmentStart sb;
  ASSERT_TRUE(codec::decode_segment_start(codec::encode_segment_start(s), &sb));
  EXPECT_EQ(sb.number, 3u);
  EXPECT_EQ(sb.id_limit, 1025u);
  std::string wrong = codec::encode_segment_start(s);
  wrong[0] = 'X';
  EXPECT_FALSE(codec::decode_segment_start(wrong, &sb));
}

}  // namespace
}  // namespace wheel::jobs
