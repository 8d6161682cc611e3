// SPDX-License-Identifier: Apache-2.0
// FarIdIndex: building, persisting and opening (far_id_index_lookup.cc: lookup). The side file:
//
//   offset 0  u32  masked CRC32C of bytes [4, 8 + length)
//          4  u32  length of what follows
//          8  "WJIX", u32 version (1), u64 covered (the synced segment length it was written
//             for), u64 block count, then per block u64 first id, u64 offset.
//
// Integers are little-endian, as in the log (log_format.h).
#include "wheel/jobs/log/far_id_index.h"

#include <span>

#include "crc32c.h"
#include "log_format.h"
#include "log_reader.h"
#include "record_codec.h"
#include "replace_file.h"

namespace wheel::jobs {
namespace {

constexpr std::uint32_t kVersion = 1;
constexpr std::size_t kHeader = 8;
constexpr std::size_t kFixed = 4 + 4 + 8 + 8;
constexpr std::size_t kPerBlock = 16;

std::string dir_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

}  // namespace

FarIdIndex::FarIdIndex(const FarIdIndexOptions& options)
    : opt_(options), fs_(options.fs ? options.fs : &posix_file_system()) {}

FarIdIndex::~FarIdIndex() = default;

void FarIdIndex::note_put(std::uint64_t id, std::uint64_t offset, std::uint64_t size) {
  // A new block when this put is the first to start in its 64 KiB stretch.
  if (blocks_.empty() || offset / kBlockBytes != blocks_.back().offset / kBlockBytes) {
    blocks_.push_back({id, offset});
  }
  last_id_ = id;
  end_ = offset + size;
}

std::error_code FarIdIndex::persist(std::uint64_t synced_bytes) {
  // Only blocks whose first put is below the synced length: after a power cut the segment still
  // holds every record the side file names.
  std::size_t count = 0;
  while (count < blocks_.size() && blocks_[count].offset < synced_bytes) ++count;
  std::string rec(kHeader, '\0');
  rec.append("WJIX");
  log::put_u32(&rec, kVersion);
  log::put_u64(&rec, synced_bytes);
  log::put_u64(&rec, count);
  for (std::size_t i = 0; i < count; ++i) {
    log::put_u64(&rec, blocks_[i].first_id);
    log::put_u64(&rec, blocks_[i].offset);
  }
  const auto length = static_cast<std::uint32_t>(rec.size() - kHeader);
  log::store_u32(rec.data() + 4, length);
  log::store_u32(rec.data(), crc32c::mask(crc32c::value(rec.data() + 4, length + 4)));
  return log::replace_file(*fs_, opt_.index_path, dir_of(opt_.index_path), rec);
}

bool FarIdIndex::load_side_file(std::uint64_t segment_size, std::string* why) {
  std::uint64_t size = 0;
  if (fs_->file_size(opt_.index_path, &size)) {
    *why = "missing";
    return false;
  }
  std::string data;
  if (size < kHeader + kFixed || fs_->read_file(opt_.index_path, &data) ||
      data.size() < kHeader + kFixed) {
    *why = "short or unreadable";
    return false;
  }
  const char* p = data.data();
  const std::uint32_t length = log::get_u32(p + 4);
  if (length != data.size() - kHeader) {
    *why = "length " + std::to_string(length) + " against " + std::to_string(data.size());
    return false;
  }
  if (crc32c::unmask(log::get_u32(p)) != crc32c::value(p + 4, length + 4)) {
    *why = "checksum mismatch";
    return false;
  }
  p += kHeader;
  const std::uint64_t covered = log::get_u64(p + 8);
  const std::uint64_t count = log::get_u64(p + 16);
  if (std::string_view(p, 4) != "WJIX" || log::get_u32(p + 4) != kVersion ||
      count != (length - kFixed) / kPerBlock || (length - kFixed) % kPerBlock != 0) {
    *why = "not a side file of this version";
    return false;
  }
  if (covered > segment_size) {
    *why = "covers " + std::to_string(covered) + " bytes, the segment has " +
           std::to_string(segment_size);
    return false;
  }
  blocks_.clear();
  covered_ = covered;
  for (std::uint64_t i = 0; i < count; ++i) {
    const char* b = p + kFixed + i * kPerBlock;
    const FarIdBlock block{log::get_u64(b), log::get_u64(b + 8)};
    if (block.offset >= covered ||
        (!blocks_.empty() && (block.offset / kBlockBytes <= blocks_.back().offset / kBlockBytes ||
                              block.first_id <= blocks_.back().first_id))) {
      *why = "block " + std::to_string(i) + " out of order or past what it covers";
      blocks_.clear();
      covered_ = 0;
      return false;
    }
    blocks_.push_back(block);
  }
  return true;
}

bool FarIdIndex::scan(std::uint64_t from, FarIdRecovered* recovered, std::string* error) {
  std::uint64_t size = 0;
  std::string data;
  std::error_code ec = fs_->file_size(opt_.segment_path, &size);
  if (!ec && size > from) ec = fs_->read_range(opt_.segment_path, from, size - from, &data);
  if (ec) {
    *error = opt_.segment_path + ": " + ec.message();
    return false;
  }
  recovered->scanned_bytes += data.size();
  log::Reader reader(data);
  log::Record record;
  for (;;) {
    const auto status = reader.next(&record);
    if (status == log::Reader::Status::kEnd) break;
    if (status == log::Reader::Status::kCorrupt) {
      // Damage past the synced length the side file was written for is an unsynced tail a
      // power cut tore (valid records may follow it); before it, or with no side file, only
      // damage with nothing valid after it is.
      const bool unsynced = covered_ > 0 && from + reader.position() >= covered_;
      if (!unsynced && log::Reader::find_valid(data, reader.position()) != data.size()) {
        *error = opt_.segment_path + ": damaged record at offset " +
                 std::to_string(from + reader.position()) + " (" + reader.reason() + ")";
        return false;
      }
      recovered->torn_bytes = data.size() - reader.position();  // a torn tail: not indexed
      break;
    }
    if (record.type != static_cast<std::uint8_t>(log::RecordType::kPut)) continue;
    std::uint64_t id = 0;
    if (!codec::peek_put_id(record.payload, &id) || (end_ > 0 && id <= last_id_)) {
      *error = opt_.segment_path + ": put at offset " + std::to_string(from + record.offset) +
               " has no id or an id out of order";
      return false;
    }
    note_put(id, from + record.offset, record.size());
  }
  return true;
}

std::unique_ptr<FarIdIndex> FarIdIndex::open(const FarIdIndexOptions& options,
                                             FarIdRecovered* recovered, std::string* error) {
  *recovered = {};
  auto index = std::unique_ptr<FarIdIndex>(new FarIdIndex(options));
  std::uint64_t segment_size = 0;
  if (auto ec = index->fs_->file_size(options.segment_path, &segment_size)) {
    *error = options.segment_path + ": " + ec.message();
    return nullptr;
  }
  std::string why;
  if (index->load_side_file(segment_size, &why)) {
    // Rescan from the last block on: it checks that the side file matches the segment, and
    // indexes what was appended after the side file was written (an open segment's tail).
    std::uint64_t from = 0;
    FarIdBlock last{};
    if (!index->blocks_.empty()) {
      last = index->blocks_.back();
      index->blocks_.pop_back();
      from = last.offset;
      index->end_ = from;
    }
    std::string scan_error;
    const std::size_t at = index->blocks_.size();
    if (index->scan(from, recovered, &scan_error) &&
        (from == 0 || (index->blocks_.size() > at && index->blocks_[at].offset == last.offset &&
                       index->blocks_[at].first_id == last.first_id))) {
      recovered->from_side_file = true;
      return index;
    }
    why = "its last block does not match the segment";
  }
  // Not trusted: rebuild from the whole segment.
  index = std::unique_ptr<FarIdIndex>(new FarIdIndex(options));
  recovered->rebuilt = true;
  recovered->why_rebuilt = why;
  recovered->torn_bytes = 0;
  if (!index->scan(0, recovered, error)) return nullptr;
  return index;
}

}  // namespace wheel::jobs
