// SPDX-License-Identifier: Apache-2.0
// FarSegmentWriter: writes one far segment (`<20-digit number>.wjf`, docs/jobs.md, "Far-future
// jobs on disk (design)"): a segment-start record, then far jobs' put records, in the log's own
// framing (log_format.h, record_codec.h), with its sparse id index (FarIdIndex) kept as the puts
// are appended and persisted to `<number>.wji` for the synced part only. A standalone writer with
// its own sync(): the design's second log head under the job log's group commit is not wired yet.
//
// Threads: one owner thread; every method blocks on the file system where it says so.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <system_error>

#include "wheel/jobs/log/far_id_index.h"
#include "wheel/jobs/log/file_system.h"
#include "wheel/jobs/log/put_record.h"

namespace wheel::jobs {

struct FarSegmentOptions {
  std::string dir;           // exists (the job log's directory)
  std::uint64_t number = 1;  // the segment's number (its file names)
  FileSystem* fs = nullptr;  // null: posix_file_system(); else must outlive the writer
};

class FarSegmentWriter {
 public:
  // The segment's and its side file's paths.
  static std::string segment_path(const FarSegmentOptions& options);
  static std::string index_path(const FarSegmentOptions& options);

  // Creates a new segment (refused when its file exists: EEXIST) and writes its segment-start
  // record, synced with the directory. Null and *error (naming the file) on failure. Blocks.
  static std::unique_ptr<FarSegmentWriter> create(const FarSegmentOptions& options,
                                                  std::string* error);
  ~FarSegmentWriter();
  FarSegmentWriter(const FarSegmentWriter&) = delete;
  FarSegmentWriter& operator=(const FarSegmentWriter&) = delete;

  // Appends `job`'s put record (not durable until sync()) and notes it in the index; *offset
  // (may be null) is where it starts. REQUIRES: job.id above every id appended before. On error
  // the segment is cut back to its last record and the writer refuses further appends
  // (failed()). Blocks.
  std::error_code append(const PutRecord& job, std::uint64_t* offset);
  // Makes every append so far durable (fdatasync), then persists the index for it. Blocks.
  std::error_code sync();

  // Reads job `id` back through the index (one bounded read): *found false when it is not in
  // this segment. Errors as FarIdIndex::lookup, and illegal_byte_sequence for a put that does
  // not decode. Blocks.
  std::error_code read(std::uint64_t id, PutRecord* job, bool* found) const;

  const FarIdIndex& index() const { return index_; }
  std::uint64_t size() const { return size_; }            // bytes appended
  std::uint64_t synced_bytes() const { return synced_; }  // made durable by sync()
  bool failed() const { return failed_; }

 private:
  FarSegmentWriter(const FarSegmentOptions& options, FileSystem* fs);

  FarSegmentOptions opt_;
  FileSystem* fs_;
  std::unique_ptr<WritableFile> file_;
  FarIdIndex index_;
  std::uint64_t size_ = 0;
  std::uint64_t synced_ = 0;
  bool failed_ = false;
};

}  // namespace wheel::jobs
