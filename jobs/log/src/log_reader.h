// SPDX-License-Identifier: Apache-2.0
// Internal. Walks the records of one segment held in memory. It never hands out a record whose
// CRC does not match: it stops with kCorrupt, the byte offset and a reason instead. What to do
// then (truncate a torn tail, fail, skip) is the caller's decision (job_log_recovery.cc).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace wheel::jobs::log {

struct Record {
  std::uint64_t offset = 0;  // of the header, from the start of the segment
  std::uint8_t type = 0;
  std::string_view payload;  // points into the reader's data
  std::uint64_t size() const { return 9 + payload.size(); }
};

class Reader {
 public:
  enum class Status { kRecord, kEnd, kCorrupt };

  explicit Reader(std::string_view data, std::uint64_t start = 0) : data_(data), pos_(start) {}

  // The next record. kEnd at a clean end of data; kCorrupt leaves the position at the bad
  // record (corrupt_offset()) and says why (reason()); calling next() again repeats it.
  Status next(Record* record);

  std::uint64_t position() const { return pos_; }
  std::uint64_t corrupt_offset() const { return pos_; }
  const std::string& reason() const { return reason_; }
  // Continues at `offset` (after skip_to(find_valid(...)) to skip a corrupt stretch).
  void skip_to(std::uint64_t offset) { pos_ = offset; }

  // The first offset >= `from` where a whole record with a good CRC starts, or data.size()
  // when there is none: tells a torn tail (nothing valid after the damage) from damage in the
  // middle. Linear in the bytes after `from` except for lengths that fit, which are checked.
  static std::uint64_t find_valid(std::string_view data, std::uint64_t from);

 private:
  std::string_view data_;
  std::uint64_t pos_;
  std::string reason_;
};

}  // namespace wheel::jobs::log
