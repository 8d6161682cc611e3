// SPDX-License-Identifier: Apache-2.0
// LogIndex: a JobLog's per-job memory kept by the log's owner instead of the log (lent with
// JobLog::lend_index): for each live job, where its put record is and its state now. A log that
// keeps its own index holds a hash-map node per live job (about 70 bytes); the owner of a job
// queue already holds each job and can keep the place in it (8 bytes: a LogJournal keeps it
// in Job::journal_ref), so with a lent index the log holds nothing per job.
//
// Threads: called on the log's owner thread only, from the log's own calls (change, remove,
// read_body by id, poll's compaction).
#pragma once

#include <cstdint>

#include "wheel/jobs/log/stored_job.h"

namespace wheel::jobs {

// Where a put record is: its byte position over the log's segments taken in the order they
// were written. Meaningful while one JobLog is open (open() hands out the recovered jobs' in
// StoredJob::log_position, put() the new ones'; compaction moves them with LogIndex::placed).
using LogPosition = std::uint64_t;

// Where a live job's put record is, and the sizes its length follows from (the log adds the
// counters it carries): what the log needs to read the record back (JobLog::read_body) or to
// count its bytes.
struct PutPlace {
  LogPosition position = 0;
  std::uint32_t tube_size = 0;  // its tube name's length (at most 255)
  std::uint32_t body_size = 0;
};

class LogIndex {
 public:
  // A live job as the log's index knows it (the log's own index holds these too).
  struct Entry {
    PutPlace put;
    // Its state now, as of the changes appended so far (a reserved job: as before its reserve).
    StoredState state = StoredState::kReady;
    std::uint32_t priority = 0;
    std::int64_t due_unix_ms = 0;  // kDelayed: when it becomes ready (wall clock, ms)
  };

  // Live job `id` (put and not removed): fills *entry and returns true. Otherwise false.
  virtual bool find(std::uint64_t id, Entry* entry) const = 0;
  // Compaction rewrote live job `id`'s put record at `position`: find() answers it from now on.
  virtual void placed(std::uint64_t id, LogPosition position) = 0;

 protected:
  ~LogIndex() = default;
};

}  // namespace wheel::jobs
