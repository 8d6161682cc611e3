// SPDX-License-Identifier: Apache-2.0
#include "log_reader.h"

#include "crc32c.h"
#include "log_format.h"

namespace wheel::jobs::log {
namespace {

// Checks the record at `pos`; on success sets *length. On failure says why in *why (if given).
bool check_at(std::string_view data, std::uint64_t pos, std::uint32_t* length, std::string* why) {
  const std::uint64_t left = data.size() - pos;
  if (left < kHeaderSize) {
    if (why) *why = "truncated header (" + std::to_string(left) + " of 9 bytes)";
    return false;
  }
  const char* p = data.data() + pos;
  const std::uint32_t len = get_u32(p + 4);
  if (len > kMaxPayload) {
    if (why) *why = "length " + std::to_string(len) + " over the limit";
    return false;
  }
  if (len > left - kHeaderSize) {
    if (why) {
      *why = "length " + std::to_string(len) + " past the end (" +
             std::to_string(left - kHeaderSize) + " bytes left)";
    }
    return false;
  }
  const std::uint32_t stored = crc32c::unmask(get_u32(p));
  if (crc32c::value(p + 4, 5 + std::size_t{len}) != stored) {
    if (why) *why = "checksum mismatch";
    return false;
  }
  *length = len;
  return true;
}

}  // namespace

std::size_t begin_record(std::string* out, RecordType type) {
  const std::size_t start = out->size();
  char header[kHeaderSize] = {};
  header[8] = static_cast<char>(type);
  out->append(header, sizeof header);
  return start;
}

void finish_record(std::string* out, std::size_t start) {
  char* p = out->data() + start;
  store_u32(p + 4, static_cast<std::uint32_t>(out->size() - start - kHeaderSize));
  store_u32(p, crc32c::mask(crc32c::value(p + 4, out->size() - start - 4)));
}

void append_record(std::string* out, RecordType type, std::string_view payload) {
  const std::size_t start = begin_record(out, type);
  out->append(payload);
  finish_record(out, start);
}

Reader::Status Reader::next(Record* record) {
  if (pos_ >= data_.size()) return Status::kEnd;
  std::uint32_t len = 0;
  if (!check_at(data_, pos_, &len, &reason_)) return Status::kCorrupt;
  record->offset = pos_;
  record->type = static_cast<std::uint8_t>(data_[pos_ + 8]);
  record->payload = data_.substr(pos_ + kHeaderSize, len);
  pos_ += kHeaderSize + len;
  return Status::kRecord;
}

std::uint64_t Reader::find_valid(std::string_view data, std::uint64_t from) {
  std::uint32_t len = 0;
  for (std::uint64_t pos = from; pos + kHeaderSize <= data.size(); ++pos) {
    if (check_at(data, pos, &len, nullptr)) return pos;
  }
  return data.size();
}

}  // namespace wheel::jobs::log
