// SPDX-License-Identifier: Apache-2.0
// FarIdIndex::lookup: binary search to the block, then read its stretch and walk the records.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "log_format.h"
#include "log_reader.h"
#include "record_codec.h"
#include "wheel/jobs/log/far_id_index.h"
#include "wheel/logger.h"

namespace wheel::jobs {

std::error_code FarIdIndex::lookup(std::uint64_t id, FarIdHit* hit) const {
  *hit = {};
  if (blocks_.empty() || id < blocks_.front().first_id || id > last_id_) return {};
  // The last block whose first id is <= id: the put, if any, starts in its stretch.
  const auto it =
      std::upper_bound(blocks_.begin(), blocks_.end(), id,
                       [](std::uint64_t v, const FarIdBlock& b) { return v < b.first_id; });
  const std::size_t i = static_cast<std::size_t>(it - blocks_.begin()) - 1;
  const std::uint64_t limit = i + 1 < blocks_.size() ? blocks_[i + 1].offset : end_;
  if (!reader_) {
    if (auto ec = fs_->open_read(opt_.segment_path, &reader_)) return ec;
  }
  auto corrupt = [&](std::uint64_t at, const std::string& why) {
    logger()->error("far segment {}: record at offset {} unreadable looking up job {}: {}",
                    opt_.segment_path, at, id, why);
    return std::make_error_code(std::errc::illegal_byte_sequence);
  };
  std::uint64_t pos = blocks_[i].offset;
  std::uint64_t need = 0;  // a record that crossed the last read's end: read it whole
  std::string data;
  while (pos < limit) {
    const std::uint64_t want = std::max(need, std::min(limit - pos, kBlockBytes));
    if (auto ec = reader_->read_at(pos, std::min(want, end_ - pos), &data)) return ec;
    const bool reread = need > 0;
    need = 0;
    log::Reader reader(data);
    log::Record record;
    for (;;) {
      const auto status = reader.next(&record);
      if (status == log::Reader::Status::kRecord) {
        if (record.type != static_cast<std::uint8_t>(log::RecordType::kPut)) continue;
        std::uint64_t got = 0;
        if (!codec::peek_put_id(record.payload, &got)) {
          return corrupt(pos + record.offset, "a put without an id");
        }
        if (got > id) return {};  // ids grow with the offset: it is not here
        if (got == id) {
          *hit = {true, pos + record.offset, record.size(), std::string(record.payload)};
          return {};
        }
        continue;
      }
      const std::uint64_t at = reader.position();
      if (status == log::Reader::Status::kEnd) {
        pos += at;
        break;
      }
      // kCorrupt: a record cut by the read's end is read again whole; anything else is damage.
      const std::uint64_t left = data.size() - at;
      const std::uint64_t length =
          left >= log::kHeaderSize ? log::get_u32(data.data() + at + 4) : 0;
      const std::uint64_t whole = log::kHeaderSize + length;
      // A record still cut after a read sized for it makes no progress: damage.
      const bool cut = !(reread && at == 0) && (left < log::kHeaderSize ? at > 0 : whole > left);
      if (!cut || length > log::kMaxPayload || pos + at + whole > end_) {
        return corrupt(pos + at, reader.reason());
      }
      pos += at;
      need = left < log::kHeaderSize ? kBlockBytes : whole;
      break;
    }
  }
  return {};
}

}  // namespace wheel::jobs
