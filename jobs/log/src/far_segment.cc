// SPDX-License-Identifier: Apache-2.0
#include "wheel/jobs/log/far_segment.h"

#include <cinttypes>
#include <cstdio>
#include <random>
#include <span>

#include "log_format.h"
#include "record_codec.h"

namespace wheel::jobs {
namespace {

std::string named(const FarSegmentOptions& o, const char* suffix) {
  char name[32];
  std::snprintf(name, sizeof name, "%020" PRIu64 "%s", o.number, suffix);
  return o.dir + "/" + name;
}

FarIdIndexOptions index_options(const FarSegmentOptions& o, FileSystem* fs) {
  FarIdIndexOptions io;
  io.segment_path = FarSegmentWriter::segment_path(o);
  io.index_path = FarSegmentWriter::index_path(o);
  io.fs = fs;
  return io;
}

}  // namespace

std::string FarSegmentWriter::segment_path(const FarSegmentOptions& options) {
  return named(options, ".wjf");
}

std::string FarSegmentWriter::index_path(const FarSegmentOptions& options) {
  return named(options, ".wji");
}

FarSegmentWriter::FarSegmentWriter(const FarSegmentOptions& options, FileSystem* fs)
    : opt_(options), fs_(fs), index_(index_options(options, fs)) {}

FarSegmentWriter::~FarSegmentWriter() = default;

std::unique_ptr<FarSegmentWriter> FarSegmentWriter::create(const FarSegmentOptions& options,
                                                           std::string* error) {
  FileSystem* fs = options.fs ? options.fs : &posix_file_system();
  auto writer = std::unique_ptr<FarSegmentWriter>(new FarSegmentWriter(options, fs));
  const std::string path = segment_path(options);
  std::uint64_t existing = 0;
  std::error_code ec;
  if (!fs->file_size(path, &existing)) ec = std::make_error_code(std::errc::file_exists);
  if (!ec) ec = fs->open_append(path, &writer->file_);
  std::string rec;
  log::append_record(&rec, log::RecordType::kSegmentStart,
                     codec::encode_segment_start({options.number, 0, std::random_device{}()}));
  if (!ec) ec = writer->file_->append(std::as_bytes(std::span(rec.data(), rec.size())));
  if (!ec) ec = writer->file_->sync();
  if (!ec) ec = fs->sync_dir(options.dir);
  if (ec) {
    *error = path + ": " + ec.message();
    return nullptr;
  }
  writer->size_ = writer->synced_ = rec.size();
  return writer;
}

std::error_code FarSegmentWriter::append(const PutRecord& job, std::uint64_t* offset) {
  if (failed_) return std::make_error_code(std::errc::io_error);
  std::string rec;
  log::append_record(&rec, log::RecordType::kPut, codec::encode_put(job));
  if (auto ec = file_->append(std::as_bytes(std::span(rec.data(), rec.size())))) {
    // Cut a partial record back so the next one starts where the index expects it.
    if (fs_->truncate(segment_path(opt_), size_)) failed_ = true;
    return ec;
  }
  index_.note_put(job.id, size_, rec.size());
  if (offset != nullptr) *offset = size_;
  size_ += rec.size();
  return {};
}

std::error_code FarSegmentWriter::sync() {
  const std::uint64_t target = size_;
  if (auto ec = file_->sync()) return ec;
  synced_ = target;
  return index_.persist(synced_);
}

std::error_code FarSegmentWriter::read(std::uint64_t id, PutRecord* job, bool* found) const {
  *found = false;
  FarIdHit hit;
  if (auto ec = index_.lookup(id, &hit)) return ec;
  if (!hit.found) return {};
  if (!codec::decode_put(hit.payload, job)) {
    return std::make_error_code(std::errc::illegal_byte_sequence);
  }
  job->log_position = hit.offset;
  *found = true;
  return {};
}

}  // namespace wheel::jobs
