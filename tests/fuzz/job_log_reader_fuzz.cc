// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the job log's reader and its recovery, on bytes an attacker or a broken
// disk chose. The input is one segment file's bytes. Checked: the reader never hands out a
// record whose CRC (recomputed here with the table path) does not match, every record lies
// inside the input, the payload decoders never read past a payload; then JobLog::open() on a
// directory holding the input as its segment (and again after it, as an older segment) either
// fails with a message naming the file and offset or recovers jobs, and never crashes.
#include <spdlog/spdlog.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "crc32c.h"
#include "log_format.h"
#include "log_reader.h"
#include "record_codec.h"
#include "support/fault_injection_fs.h"
#include "wheel/jobs/log/job_log.h"
#include "wheel/logger.h"

namespace {

using namespace wheel::jobs;

void check(bool ok) {
  if (!ok) std::abort();
}

void read_all(std::string_view data) {
  log::Reader reader(data);
  log::Record rec;
  for (int guard = 0; guard < 1'000'000; ++guard) {
    const auto status = reader.next(&rec);
    if (status != log::Reader::Status::kRecord) {
      if (status == log::Reader::Status::kCorrupt) {
        check(reader.corrupt_offset() < data.size());
        check(!reader.reason().empty());
      }
      return;
    }
    check(rec.offset + rec.size() <= data.size());
    const char* p = data.data() + rec.offset;
    check(crc32c::unmask(log::get_u32(p)) ==
          crc32c::extend_portable(0, p + 4, 5 + rec.payload.size()));
    PutRecord job;
    ChangeRecord change;
    codec::SegmentStart start;
    codec::SyncedMark mark;
    std::uint64_t v = 0;
    if (codec::decode_put(rec.payload, &job)) {
      check(codec::put_record_size(job) == rec.size());
    }
    codec::decode_change(rec.payload, &change);
    codec::decode_segment_start(rec.payload, &start);
    codec::decode_synced(rec.payload, &mark);
    codec::decode_u64(rec.payload, &v);
  }
}

void recover(std::string_view data, bool as_last, bool skip) {
  testing::FaultInjectionFs fs;
  fs.create_dir("/d");
  fs.set_contents("/d/00000000000000000001.wjl", std::string(data));
  if (!as_last) {
    // A valid, empty segment after it makes the input an older, fully synced one.
    std::string next;
    log::append_record(&next, log::RecordType::kSegmentStart,
                       codec::encode_segment_start({2, 1, 0}));
    fs.set_contents("/d/00000000000000000002.wjl", next);
  }
  JobLogOptions o;
  o.dir = "/d";
  o.fs = &fs;
  o.reserve_bytes = 0;
  o.sync_thread = false;
  o.skip_corrupt = skip;
  Recovered r;
  std::string error;
  auto log = JobLog::open(o, &r, &error);
  if (!log) {
    check(error.find("/d/") != std::string::npos);
    return;
  }
  for (const auto& job : r.jobs) check(job.id < r.next_id);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const bool quiet = [] {
    wheel::logger()->set_level(spdlog::level::off);
    return true;
  }();
  (void)quiet;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  read_all(bytes);
  if (size > 0) log::Reader::find_valid(bytes, data[0] % size);
  recover(bytes, true, false);
  recover(bytes, false, false);
  recover(bytes, true, true);
  return 0;
}
