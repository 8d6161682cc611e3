// SPDX-License-Identifier: Apache-2.0
// JobLogOptions: how a JobLog (job_log.h) syncs, sizes its segments and keeps its reserve.
// Each field's range is checked by JobLog::open().
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "wheel/jobs/log/file_system.h"

namespace wheel::jobs {

enum class SyncPolicy {
  kAlways,    // acknowledged only when on disk; concurrent changes share one fdatasync
  kInterval,  // acknowledged at once; synced at most every sync_interval_ms
  kNever,     // acknowledged at once; the OS writes back when it likes
};

struct JobLogOptions {
  std::string dir;  // created if absent (not its parents)
  SyncPolicy sync = SyncPolicy::kAlways;
  std::uint32_t sync_interval_ms = 1000;  // kInterval: 1 .. 3,600,000
  // A segment is closed and a new one started past this size: 4 KiB .. 1 GiB. Compaction works
  // one segment at a time, so this bounds the pause of one compaction step.
  std::uint64_t segment_bytes = 8u << 20;
  // Kept free in the directory's file system (a file "reserve.space") and given up when the
  // disk is full, so that deletes keep working and compaction has room to rewrite a segment
  // and give the deletes' space back to puts (docs/jobs.md, "Deletes give the room back": a
  // reserve of one segment lets puts resume after about 1/8 of a segment's jobs are deleted,
  // in any order): 0 .. 1 GiB.
  std::uint64_t reserve_bytes = 8u << 20;
  // A corrupt record in the middle of the log stops open() unless this is set: then the
  // damaged stretch is skipped (logged with file and offset) and the jobs after it are kept.
  bool skip_corrupt = false;
  // False: open() leaves the bodies of the recovered jobs in the log (PutRecord::body empty,
  // body_size set) and the owner reads them back with read_body() when it needs them: a
  // restart then holds no body in memory.
  bool load_bodies = true;
  // True: open() leaves Recovered::jobs empty and JobLog::take_recovered_jobs() hands the jobs
  // out one at a time instead, so a restart never holds them all twice (the owner's structures
  // and the list); the segments' bytes are held until then.
  bool defer_jobs = false;
  // False: fdatasync runs inside commit() on the owner thread (no thread at all).
  bool sync_thread = true;
  // Called from the sync thread after each sync (e.g. uv_async_send to wake the loop). May be
  // empty; it must not call into the JobLog.
  std::function<void()> wakeup;
  FileSystem* fs = nullptr;  // null: posix_file_system(); else not owned, must outlive the log
  // Times the fdatasyncs for sync_metrics(), on the syncing thread (monotonic nanoseconds).
  // Empty: std::chrono::steady_clock. Tests pass a clock they move by hand.
  std::function<std::chrono::nanoseconds()> sync_clock;
};

}  // namespace wheel::jobs
