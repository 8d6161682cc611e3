// SPDX-License-Identifier: Apache-2.0
// LogSyncMetrics: what the job log's group commit did, as histograms for a Prometheus scrape.
// One observation per sync batch (one sync of the log's sync thread, or inline with
// sync_thread off): the fdatasyncs that made a batch of appended records durable.
//   seconds — how long the batch's fdatasyncs took (all files written since the last batch,
//             and the directory when asked), on JobLogOptions::sync_clock;
//   records — changes (put, change, remove, id limit) the batch made durable; 0 when only
//             bookkeeping records were pending;
//   bytes   — bytes appended to the log since the previous batch, bookkeeping included.
// The fdatasyncs of starting a segment and of the disk-space reserve are not batches and are
// not counted. A failed sync is not counted either (the log then fails: see job_log.h).
#pragma once

#include <array>

#include "wheel/metrics_histogram.h"

namespace wheel::jobs {

// Seconds: 50 us (a write cache) to 10 s (a disk that stalls).
inline constexpr std::array<double, 17> kSyncSecondsBounds = {
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
    0.05,    0.1,    0.25,    0.5,    1,     2.5,    5,     10};
// Records per batch: powers of two, 1 (no sharing) to 16 Ki (a burst of clients).
inline constexpr std::array<double, 15> kSyncBatchRecordsBounds = {
    1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384};
// Bytes per batch: 256 B (one small job) to 1 GiB (one job of the largest size).
inline constexpr std::array<double, 12> kSyncBatchBytesBounds = {
    256,     1024,    4096,     16384,    65536,     262144,
    1048576, 4194304, 16777216, 67108864, 268435456, 1073741824};

// The three histograms read at one moment. `seconds` sums nanoseconds; the others sum their
// own unit (records, bytes): render them with base_per_unit 1e9, 1 and 1.
struct LogSyncMetrics {
  HistogramCounts<kSyncSecondsBounds.size()> seconds;
  HistogramCounts<kSyncBatchRecordsBounds.size()> records;
  HistogramCounts<kSyncBatchBytesBounds.size()> bytes;
};

}  // namespace wheel::jobs
