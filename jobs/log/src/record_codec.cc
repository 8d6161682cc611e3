// SPDX-License-Identifier: Apache-2.0
#include "record_codec.h"

#include <cstring>

#include "log_format.h"

namespace wheel::jobs::codec {
namespace {

using log::get_u32;
using log::get_u64;
using log::put_u32;
using log::put_u64;

// Put payload: id u64, state u8, priority u32, due i64, ttr u64, created i64, tube length u8,
// tube, body length u32, body, then (version 2, when not a new job's) the counters.
constexpr std::size_t kPutFixed = 8 + 1 + 4 + 8 + 8 + 8 + 1;
// Change payload: id u64, state u8, priority u32, due i64, then (version 2) the counters.
constexpr std::size_t kChangeSize = 8 + 1 + 4 + 8;

bool valid_state(std::uint8_t s) {
  return s <= static_cast<std::uint8_t>(StoredState::kBuried);
}

// The delay of a job as put: what a put record without counters means.
std::uint64_t put_delay(const PutRecord& job) {
  if (job.state != StoredState::kDelayed || job.due_unix_ms <= job.created_unix_ms) return 0;
  return static_cast<std::uint64_t>(job.due_unix_ms - job.created_unix_ms);
}

void put_counters(std::string* out, const RecordCounters& c) {
  put_u64(out, c.delay_ms);
  for (std::uint32_t v : {c.reserves, c.timeouts, c.releases, c.buries, c.kicks}) put_u32(out, v);
}

RecordCounters get_counters(const char* p) {
  RecordCounters c;
  c.delay_ms = get_u64(p);
  c.reserves = get_u32(p + 8);
  c.timeouts = get_u32(p + 12);
  c.releases = get_u32(p + 16);
  c.buries = get_u32(p + 20);
  c.kicks = get_u32(p + 24);
  return c;
}

}  // namespace

bool put_needs_counters(const PutRecord& job) {
  const RecordCounters& c = job.counters;
  return c.reserves != 0 || c.timeouts != 0 || c.releases != 0 || c.buries != 0 || c.kicks != 0 ||
         c.delay_ms != put_delay(job);
}

void append_put(std::string* out, const PutRecord& job) {
  char fixed[kPutFixed];
  log::store_u64(fixed, job.id);
  fixed[8] = static_cast<char>(job.state);
  log::store_u32(fixed + 9, job.priority);
  log::store_u64(fixed + 13, static_cast<std::uint64_t>(job.due_unix_ms));
  log::store_u64(fixed + 21, job.ttr_ms);
  log::store_u64(fixed + 29, static_cast<std::uint64_t>(job.created_unix_ms));
  fixed[37] = static_cast<char>(job.tube.size());
  out->append(fixed, sizeof fixed);
  out->append(job.tube);
  put_u32(out, static_cast<std::uint32_t>(job.body.size()));
  out->append(job.body);
  if (put_needs_counters(job)) put_counters(out, job.counters);
}

std::string encode_put(const PutRecord& job) {
  std::string out;
  out.reserve(kPutFixed + job.tube.size() + 4 + job.body.size() + kCountersSize);
  append_put(&out, job);
  return out;
}

bool peek_put_id(std::string_view p, std::uint64_t* id) {
  if (p.size() < kPutFixed) return false;
  *id = get_u64(p.data());
  return true;
}

bool put_body(std::string_view p, std::uint64_t* id, std::string_view* body) {
  if (p.size() < kPutFixed) return false;
  const std::size_t tube_len = static_cast<unsigned char>(p[kPutFixed - 1]);
  if (p.size() < kPutFixed + tube_len + 4) return false;
  const std::uint32_t body_len = get_u32(p.data() + kPutFixed + tube_len);
  if (p.size() - (kPutFixed + tube_len + 4) < body_len) return false;
  *id = get_u64(p.data());
  *body = p.substr(kPutFixed + tube_len + 4, body_len);
  return true;
}

bool decode_put(std::string_view p, PutRecord* job, bool with_body) {
  if (p.size() < kPutFixed) return false;
  const char* d = p.data();
  const auto state = static_cast<std::uint8_t>(d[8]);
  if (!valid_state(state)) return false;
  const std::size_t tube_len = static_cast<unsigned char>(d[kPutFixed - 1]);
  if (p.size() < kPutFixed + tube_len + 4) return false;
  const std::uint32_t body_len = get_u32(d + kPutFixed + tube_len);
  const std::size_t base = kPutFixed + tube_len + 4 + std::size_t{body_len};
  if (p.size() != base && p.size() != base + kCountersSize) return false;
  job->id = get_u64(d);
  job->state = static_cast<StoredState>(state);
  job->priority = get_u32(d + 9);
  job->due_unix_ms = static_cast<std::int64_t>(get_u64(d + 13));
  job->ttr_ms = get_u64(d + 21);
  job->created_unix_ms = static_cast<std::int64_t>(get_u64(d + 29));
  // A job decoded into the previous one's place mostly has its tube: no copy then (replay).
  const std::string_view tube(d + kPutFixed, tube_len);
  if (job->tube != tube) job->tube.assign(tube);
  if (with_body) {
    job->body.assign(d + kPutFixed + tube_len + 4, body_len);
  } else {
    job->body.clear();
  }
  job->body_size = body_len;
  if (p.size() == base) {
    job->counters = RecordCounters{};
    job->counters.delay_ms = put_delay(*job);
  } else {
    job->counters = get_counters(d + base);
  }
  return true;
}

std::uint64_t put_record_size(const PutRecord& job) {
  return put_record_size(job, job.body.size());
}

std::uint64_t put_record_size(const PutRecord& job, std::uint64_t body_size) {
  return put_record_size(job.tube.size(), body_size, put_needs_counters(job));
}

std::uint64_t put_record_size(std::uint64_t tube_size, std::uint64_t body_size,
                              bool with_counters) {
  return log::kHeaderSize + kPutFixed + tube_size + 4 + body_size +
         (with_counters ? kCountersSize : 0);
}

std::string encode_change(const ChangeRecord& c) {
  std::string out;
  put_u64(&out, c.id);
  out.push_back(static_cast<char>(c.state));
  put_u32(&out, c.priority);
  put_u64(&out, static_cast<std::uint64_t>(c.due_unix_ms));
  put_counters(&out, c.counters);
  return out;
}

bool decode_change(std::string_view p, ChangeRecord* c, bool* with_counters) {
  if (p.size() != kChangeSize && p.size() != kChangeSize + kCountersSize) return false;
  const auto state = static_cast<std::uint8_t>(p[8]);
  if (!valid_state(state)) return false;
  c->id = get_u64(p.data());
  c->state = static_cast<StoredState>(state);
  c->priority = get_u32(p.data() + 9);
  c->due_unix_ms = static_cast<std::int64_t>(get_u64(p.data() + 13));
  // Version 1: no counters; the job keeps those it had (see recovery's apply).
  c->counters = p.size() == kChangeSize ? RecordCounters{} : get_counters(p.data() + kChangeSize);
  if (with_counters != nullptr) *with_counters = p.size() != kChangeSize;
  return true;
}

std::string encode_u64(std::uint64_t v) {
  std::string out;
  put_u64(&out, v);
  return out;
}

bool decode_u64(std::string_view p, std::uint64_t* v) {
  if (p.size() != 8) return false;
  *v = get_u64(p.data());
  return true;
}

std::string encode_segment_start(const SegmentStart& s) {
  std::string out(kMagic, sizeof kMagic);
  put_u32(&out, kFormatVersion);
  put_u64(&out, s.number);
  put_u64(&out, s.id_limit);
  put_u64(&out, s.nonce);
  return out;
}

bool decode_segment_start(std::string_view p, SegmentStart* s) {
  if (p.size() != kSegmentStartSize || std::memcmp(p.data(), kMagic, 4) != 0) return false;
  const std::uint32_t version = get_u32(p.data() + 4);
  if (version < kOldestFormatVersion || version > kFormatVersion) return false;
  s->number = get_u64(p.data() + 8);
  s->id_limit = get_u64(p.data() + 16);
  s->nonce = get_u64(p.data() + 24);
  return true;
}

std::string encode_synced(const SyncedMark& m) {
  std::string out;
  put_u64(&out, m.nonce);
  put_u64(&out, m.offset);
  return out;
}

bool decode_synced(std::string_view p, SyncedMark* m) {
  if (p.size() != 16) return false;
  m->nonce = get_u64(p.data());
  m->offset = get_u64(p.data() + 8);
  return true;
}

}  // namespace wheel::jobs::codec
