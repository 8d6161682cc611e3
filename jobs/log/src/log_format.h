// SPDX-License-Identifier: Apache-2.0
// Internal. The framing of one log record (docs/jobs.md has the whole format):
//
//   offset 0  u32  masked CRC32C of bytes [4, 9 + length): the length, the type, the payload
//          4  u32  length of the payload
//          8  u8   type (RecordType)
//          9  ...  payload
//
// Integers are little-endian. The CRC covers the length too, so a torn or flipped length is
// caught like a flipped payload byte.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace wheel::jobs::log {

inline constexpr std::size_t kHeaderSize = 9;
// Largest payload a reader accepts: a 1 GiB body plus the job's other fields, with room.
inline constexpr std::uint32_t kMaxPayload = (1u << 30) + 4096;

enum class RecordType : std::uint8_t {
  kSegmentStart = 1,  // first record of every segment: magic, version, segment number, id limit
  kPut = 2,           // a job's whole state (new job, or a live job rewritten by compaction)
  kUpdate = 3,        // a job's new state, priority and due time (release, bury, kick)
  kDelete = 4,        // a job is gone
  kIdLimit = 5,       // ids below this may have been handed out: never hand them out again
  kSynced = 6,        // the segment's bytes before offset X were synced (written after the sync)
};

// Appends one framed record to `out`.
void append_record(std::string* out, RecordType type, std::string_view payload);
// The same in two steps, for a payload encoded in place: begin_record() appends the header
// and returns where the record starts; the caller appends the payload; finish_record() fills
// in its length and CRC.
std::size_t begin_record(std::string* out, RecordType type);
void finish_record(std::string* out, std::size_t start);

// Little-endian helpers shared by the codec and the reader.
// Writes `v` at `p` (4 or 8 bytes). One append per integer: byte-wise push_back showed up in
// the profile of the put path.
inline void store_u32(char* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
inline void store_u64(char* p, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
inline void put_u32(std::string* out, std::uint32_t v) {
  char b[4];
  store_u32(b, v);
  out->append(b, sizeof b);
}
inline void put_u64(std::string* out, std::uint64_t v) {
  char b[8];
  store_u64(b, v);
  out->append(b, sizeof b);
}
inline std::uint32_t get_u32(const char* p) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}
inline std::uint64_t get_u64(const char* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

}  // namespace wheel::jobs::log
