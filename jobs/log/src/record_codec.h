// SPDX-License-Identifier: Apache-2.0
// Internal. The payloads of the job records (docs/jobs.md, "Records"). Decoders return false
// on a payload of the wrong shape; the caller reports it with file and offset.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "wheel/jobs/log/put_record.h"

namespace wheel::jobs::codec {

inline constexpr char kMagic[4] = {'W', 'J', 'O', 'B'};
// Version 2 added the counters (RecordCounters) to put and change records; version 1 logs are
// read as ever (counters zero, delay from the due time).
inline constexpr std::uint32_t kFormatVersion = 2;
inline constexpr std::uint32_t kOldestFormatVersion = 1;
// The counters as a put or change record carries them: u64 delay ms, u32 x 5.
inline constexpr std::size_t kCountersSize = 8 + 5 * 4;

// A segment-start record's payload: magic, u32 version, u64 number, id limit and nonce.
inline constexpr std::size_t kSegmentStartSize = 4 + 4 + 3 * 8;
struct SegmentStart {
  std::uint64_t number = 0;
  std::uint64_t id_limit = 0;
  std::uint64_t nonce = 0;  // random per segment: a kSynced record must carry it
};

// kSynced: written after a sync completed, it tells recovery that damage before `offset` is
// real corruption, not a torn unsynced tail. The nonce keeps a job body that imitates such a
// record from being taken for one.
struct SyncedMark {
  std::uint64_t nonce = 0;
  std::uint64_t offset = 0;
};
std::string encode_synced(const SyncedMark& mark);
bool decode_synced(std::string_view payload, SyncedMark* mark);

// A put record leaves the counters out when they are a new job's (see PutRecord::counters).
bool put_needs_counters(const PutRecord& job);
std::string encode_put(const PutRecord& job);
void append_put(std::string* out, const PutRecord& job);  // encode_put() appended to `out`
// Sets job->body_size; `with_body` false leaves job->body empty (the body stays in the log).
bool decode_put(std::string_view payload, PutRecord* job, bool with_body = true);
// The id and body of a put payload, as views into it (reading a body back).
bool put_body(std::string_view payload, std::uint64_t* id, std::string_view* body);
// The id of a put payload without copying the body (compaction, fuzzing).
bool peek_put_id(std::string_view payload, std::uint64_t* id);
// Size of the framed put record of `job` (header included): what the job costs in live bytes.
std::uint64_t put_record_size(const PutRecord& job);
// The same for a job whose body (of `body_size` bytes) was not loaded.
std::uint64_t put_record_size(const PutRecord& job, std::uint64_t body_size);
// The same from the sizes of a put's tube and body, and whether it carries counters.
std::uint64_t put_record_size(std::uint64_t tube_size, std::uint64_t body_size, bool with_counters);

std::string encode_change(const ChangeRecord& change);
// `with_counters` (may be null): false for a version-1 record, which carries none.
bool decode_change(std::string_view payload, ChangeRecord* change, bool* with_counters = nullptr);

std::string encode_u64(std::uint64_t v);  // delete (id) and id limit
bool decode_u64(std::string_view payload, std::uint64_t* v);

std::string encode_segment_start(const SegmentStart& start);
bool decode_segment_start(std::string_view payload, SegmentStart* start);

}  // namespace wheel::jobs::codec
