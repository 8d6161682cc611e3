// SPDX-License-Identifier: Apache-2.0
// FarIdIndex: the sparse id index of one far segment (docs/jobs.md, "Far-future jobs on disk
// (design)"). A far segment (`*.wjf`) holds put records in the log's own framing
// (log_format.h), ids growing with the offset. For every 64 KiB of the segment the index keeps
// the id and offset of the first put that starts in it (16 B), so a lookup by id is a binary
// search to a block and one read of about 64 KiB, never a scan of the segment.
//
// Persistence: persist(synced_bytes) replaces the side file (`*.wji`) whole (written beside,
// synced, renamed, directory synced) with the blocks whose first put lies below
// `synced_bytes`, so the side file never names a byte the segment may lose at a power cut.
// open() reads the side file and scans only the segment's tail from its last block on (one
// read of about 64 KiB for a closed segment; the unsynced part of an open one). A side file that
// is missing, torn, fails its CRC or names more than the segment holds is not trusted: open()
// rebuilds the blocks by scanning the whole segment (saying why in FarIdRecovered) and writes
// nothing; the owner calls persist() to save the rebuilt index.
//
// Threads: one owner thread; lookup() and the file methods block on the file system.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "wheel/jobs/log/file_system.h"

namespace wheel::jobs {

struct FarIdIndexOptions {
  std::string segment_path;  // the far segment (*.wjf)
  std::string index_path;    // its side file (*.wji); its directory is synced by persist()
  FileSystem* fs = nullptr;  // null: posix_file_system(); else must outlive the index
};

// One block: the first put that starts in a 64 KiB stretch of the segment.
struct FarIdBlock {
  std::uint64_t first_id = 0;
  std::uint64_t offset = 0;
};

// What open() found.
struct FarIdRecovered {
  bool from_side_file = false;      // the side file was read and trusted
  bool rebuilt = false;             // it was missing or damaged: the whole segment was scanned
  std::string why_rebuilt;          // what was wrong with it ("missing", "checksum", ...)
  std::uint64_t scanned_bytes = 0;  // segment bytes read by open()
  std::uint64_t torn_bytes = 0;     // bytes after the last whole record (ignored, not cut)
};

// A lookup's answer.
struct FarIdHit {
  bool found = false;
  std::uint64_t offset = 0;  // of the put record's header in the segment
  std::uint64_t size = 0;    // the whole framed record
  std::string payload;       // the put payload (codec::decode_put reads it), CRC checked
};

class FarIdIndex {
 public:
  static constexpr std::uint64_t kBlockBytes = 64 * 1024;

  // An empty index for a new segment (nothing read or written).
  explicit FarIdIndex(const FarIdIndexOptions& options);
  // Opens the index of an existing segment: the side file and the segment's tail, or, when the
  // side file cannot be trusted, the whole segment (see the file comment). Records after the
  // last whole one (a torn tail) are not indexed: damage past the length the side file was
  // persisted for (unsynced when it was written), or, without a trusted side file, damage with
  // no valid record after it (the owner cuts such a tail off the segment, as the log's
  // recovery does). Returns null and a message naming the file
  // on an I/O error or when the segment's records do not read as puts with growing ids.
  static std::unique_ptr<FarIdIndex> open(const FarIdIndexOptions& options,
                                          FarIdRecovered* recovered, std::string* error);
  ~FarIdIndex();
  FarIdIndex(const FarIdIndex&) = delete;
  FarIdIndex& operator=(const FarIdIndex&) = delete;

  // Notes a put record of job `id` appended at `offset`, `size` bytes long (header included).
  // REQUIRES: offset >= end() and id > every id noted before (the writer's order).
  void note_put(std::uint64_t id, std::uint64_t offset, std::uint64_t size);

  // Replaces the side file with the blocks whose first put starts below `synced_bytes`.
  // REQUIRES: the segment is synced up to `synced_bytes`, a record boundary (the writer's synced
  // length). On error the old side file (or none) stays whole. Blocks.
  std::error_code persist(std::uint64_t synced_bytes);

  // Finds job `id` in the segment: found, its record's place and payload; not found (without a
  // read when `id` is outside [first_id(), last_id()]). Reads the block's stretch up to the next
  // block, at most kBlockBytes at a time (one read when the records are smaller than that; a
  // record crossing the read's end costs one more, of its size). A record whose CRC fails, or a
  // stretch that does not read as records, is std::errc::illegal_byte_sequence (logged with
  // file and offset), never handed out. Blocks.
  std::error_code lookup(std::uint64_t id, FarIdHit* hit) const;

  const std::vector<FarIdBlock>& blocks() const { return blocks_; }
  bool empty() const { return blocks_.empty(); }
  std::uint64_t first_id() const { return blocks_.empty() ? 0 : blocks_.front().first_id; }
  std::uint64_t last_id() const { return last_id_; }
  std::uint64_t end() const { return end_; }  // end of the last noted put

 private:
  // Notes the segment's puts from `from` to its end; false (and *error) on bad records.
  bool scan(std::uint64_t from, FarIdRecovered* recovered, std::string* error);
  // Reads the side file; false (and *why) when it is missing or cannot be trusted.
  bool load_side_file(std::uint64_t segment_size, std::string* why);

  FarIdIndexOptions opt_;
  FileSystem* fs_;
  std::vector<FarIdBlock> blocks_;
  std::uint64_t last_id_ = 0;
  std::uint64_t end_ = 0;
  std::uint64_t covered_ = 0;  // the trusted side file's synced length (0: none)
  mutable std::unique_ptr<RandomAccessFile> reader_;  // opened by the first lookup
};

}  // namespace wheel::jobs
