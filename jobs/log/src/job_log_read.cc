// SPDX-License-Identifier: Apache-2.0
// JobLog::read_body(): a live job's body read back from its put record, so that the owner need
// not keep bodies in memory (JobLogOptions::load_bodies). The owner says where the record is
// (the PutPlace it keeps, which follows the job through compaction: LogIndex::placed), or the
// index does; compaction drops a segment's reader with the segment.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <stdexcept>

#include "job_log_impl.h"
#include "log_reader.h"
#include "record_codec.h"
#include "wheel/jobs/log/job_log.h"
#include "wheel/logger.h"

namespace wheel::jobs {

std::error_code JobLog::Impl::read_body(std::uint64_t id, const PutPlace& put, std::string* body) {
  PutAt e;
  if (!put_at(id, put, &e)) {
    throw std::invalid_argument("JobLog::read_body: no put record at that position");
  }
  std::string data;
  const SegmentInfo& head_info = segments.back();
  const std::uint64_t written = head_info.bytes - pending.size();
  prune_handed_off();
  const auto in_hand = std::find_if(handed_off.begin(), handed_off.end(), [&](const HandedOff& h) {
    return h.segment == e.segment && e.offset >= h.offset && e.offset < h.offset + h.bytes->size();
  });
  if (e.segment == head_info.number && e.offset >= written) {
    // Appended in this batch and not written yet (write_out()): still in `pending`.
    data = std::string_view(pending).substr(e.offset - written, e.put_size);
  } else if (in_hand != handed_off.end()) {
    // Handed to the log thread and maybe not written yet: read from the batch itself.
    data = std::string_view(*in_hand->bytes).substr(e.offset - in_hand->offset, e.put_size);
  } else {
    auto reader = readers.find(e.segment);
    if (reader == readers.end()) {
      std::unique_ptr<RandomAccessFile> file;
      if (auto ec = fs->open_read(segment_path(e.segment), &file)) {
        logger()->error("job log: cannot open {} to read job {} ({})", segment_path(e.segment), id,
                        ec.message());
        return ec;
      }
      reader = readers.emplace(e.segment, std::move(file)).first;
    }
    // put_size is the record's size, or more by the counters it will carry once rewritten: one
    // read covers the whole record.
    if (auto ec = reader->second->read_at(e.offset, e.put_size, &data)) {
      logger()->error("job log: cannot read job {} at byte offset {} of {} ({})", id, e.offset,
                      segment_path(e.segment), ec.message());
      return ec;
    }
  }
  log::Reader records(data);
  log::Record rec;
  std::uint64_t found = 0;
  std::string_view view;
  if (records.next(&rec) != log::Reader::Status::kRecord ||
      static_cast<log::RecordType>(rec.type) != log::RecordType::kPut ||
      !codec::put_body(rec.payload, &found, &view) || found != id) {
    logger()->error("job log: the put record of job {} at byte offset {} of {} is damaged ({})", id,
                    e.offset, segment_path(e.segment),
                    records.reason().empty() ? "not this job's put" : records.reason());
    return std::make_error_code(std::errc::illegal_byte_sequence);
  }
  body->assign(view);
  return {};
}

std::error_code JobLog::read_body(std::uint64_t id, const PutPlace& put, std::string* body) {
  return impl_->read_body(id, put, body);
}

std::error_code JobLog::read_body(std::uint64_t id, std::string* body) {
  LogIndex::Entry entry;
  PutAt at;
  if (!impl_->locate(id, &at, &entry)) {
    throw std::invalid_argument("JobLog::read_body: no such live job");
  }
  return impl_->read_body(id, entry.put, body);
}

}  // namespace wheel::jobs
