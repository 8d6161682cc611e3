// SPDX-License-Identifier: Apache-2.0
// Internal. The time index's files (wheel/jobs/log/time_index.h; docs/jobs.md has the layout):
//
//   a bucket file `<20-digit bucket>.tix`: 32-byte entries, each
//     offset 0  u32  masked CRC32C of bytes [4, 32)
//            4  u8   kind (1 put, 2 gone)
//            5  3 B  zero
//            8  i64  due (Unix ms)
//           16  u64  id
//           24  u64  the put record's place in the log
//
//   the journal `journal-<20-digit number>.tix`: the same entries, of any bucket, in flush order.
//
//   `checkpoint`: u32 masked CRC32C of bytes [4, 8 + length), u32 length, then the payload:
//     "WTIX", u32 version (1), u64 bucket_ms, u64 replay_from, u64 journal number, u64 journal
//     bytes, u64 bucket count, and per bucket u64 bucket, u64 bytes (of its file), u64 puts,
//     u64 gones (in its file and the journal), u64 its entries in the journal.
//
// Integers are little-endian, as in the log (log_format.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "crc32c.h"
#include "log_format.h"

namespace wheel::jobs::tix {

inline constexpr std::size_t kEntrySize = 32;  // TimeIndex::kEntrySize
inline constexpr std::uint8_t kPut = 1;
inline constexpr std::uint8_t kGone = 2;
inline constexpr const char* kCheckpointFile = "checkpoint";
inline constexpr const char* kSuffix = ".tix";
inline constexpr std::uint32_t kVersion = 1;
inline constexpr std::size_t kCheckpointHeader = 8;
inline constexpr std::size_t kCheckpointFixed = 4 + 4 + 8 + 8 + 8 + 8 + 8;
inline constexpr std::size_t kCheckpointPerBucket = 40;
inline constexpr const char* kJournalPrefix = "journal-";

// One entry's fields (TimeEntry's, and its kind).
struct Fields {
  std::uint8_t kind = 0;
  std::int64_t due_unix_ms = 0;
  std::uint64_t id = 0;
  std::uint64_t log_ref = 0;
};

// Appends one entry to `out`.
inline void append_entry(std::string* out, const Fields& e) {
  char b[kEntrySize] = {};
  b[4] = static_cast<char>(e.kind);
  log::store_u64(b + 8, static_cast<std::uint64_t>(e.due_unix_ms));
  log::store_u64(b + 16, e.id);
  log::store_u64(b + 24, e.log_ref);
  log::store_u32(b, crc32c::mask(crc32c::value(b + 4, sizeof b - 4)));
  out->append(b, sizeof b);
}

// Decodes the entry at `p` (kEntrySize bytes); false when its CRC or kind is wrong.
inline bool decode_entry(const char* p, Fields* e) {
  if (crc32c::unmask(log::get_u32(p)) != crc32c::value(p + 4, kEntrySize - 4)) return false;
  e->kind = static_cast<std::uint8_t>(p[4]);
  if (e->kind != kPut && e->kind != kGone) return false;
  e->due_unix_ms = static_cast<std::int64_t>(log::get_u64(p + 8));
  e->id = log::get_u64(p + 16);
  e->log_ref = log::get_u64(p + 24);
  return true;
}

// "00000000000000000042.tix" for bucket 42 (with `prefix` before it: "journal-...");
// false for any other name.
inline bool parse_bucket_name(std::string_view name, std::uint64_t* bucket,
                              std::string_view prefix = {}) {
  const std::string_view suffix(kSuffix);
  if (name.size() != prefix.size() + 20 + suffix.size() ||
      name.substr(0, prefix.size()) != prefix || name.substr(prefix.size() + 20) != suffix) {
    return false;
  }
  std::uint64_t v = 0;
  for (char c : name.substr(prefix.size(), 20)) {
    if (c < '0' || c > '9') return false;
    const std::uint64_t digit = static_cast<std::uint64_t>(c - '0');
    if (v > (UINT64_MAX - digit) / 10) return false;
    v = v * 10 + digit;
  }
  *bucket = v;
  return true;
}

}  // namespace wheel::jobs::tix
