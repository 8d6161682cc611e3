// SPDX-License-Identifier: Apache-2.0
// What the job log keeps in its directory beside the segments: the lock that makes it the one
// log writing there, and the id lease file that says which ids may have been handed out.
//
// The lease lives in a file of its own, not in the segments, because recovery may cut or skip
// records of the segments (a torn tail, skip_corrupt, a missing segment): a limit lost with
// them would let an acknowledged job's id be handed out again. The file is replaced whole and
// durably before an id it covers is handed out, and only when the lease ran out.
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <string>

#include "job_log_impl.h"
#include "log_reader.h"
#include "record_codec.h"
#include "replace_file.h"
#include "wheel/jobs/log/job_log.h"
#include "wheel/logger.h"

namespace wheel::jobs {

bool JobLog::Impl::lock_dir(std::string* error) {
  const std::string path = opt.dir + "/" + kLockFile;
  std::string holder;
  const std::string owner = "pid " + std::to_string(::getpid());
  const std::error_code ec = fs->lock_file(path, LockMode::kExclusive, owner, &dir_lock, &holder);
  if (ec == std::errc::resource_unavailable_try_again) {
    *error = opt.dir + " is in use by another job log" +
             (holder.empty() ? std::string() : " (" + holder + ")") + ": " + path +
             " is locked; one server per directory";
    return false;
  }
  if (ec) {
    *error = "cannot lock " + path + ": " + ec.message();
    return false;
  }
  return true;
}

bool JobLog::Impl::read_id_lease(std::uint64_t* limit, std::string* error) {
  *limit = 0;
  const std::string path = opt.dir + "/" + kIdLeaseFile;
  std::string data;
  if (auto ec = fs->read_file(path, &data)) {
    if (ec == std::errc::no_such_file_or_directory) return true;
    *error = "cannot read " + path + ": " + ec.message();
    return false;
  }
  log::Reader reader(data);
  log::Record rec;
  std::uint64_t value = 0;
  if (reader.next(&rec) == log::Reader::Status::kRecord &&
      rec.type == static_cast<std::uint8_t>(log::RecordType::kIdLimit) &&
      codec::decode_u64(rec.payload, &value) && reader.next(&rec) == log::Reader::Status::kEnd) {
    *limit = value;
    return true;
  }
  const std::string what = "damaged id lease " + path + " (not one whole id-limit record)";
  if (!opt.skip_corrupt) {
    *error = what + " (the --skip-corrupt option starts from the segments' limits)";
    return false;
  }
  logger()->error("job log: {}; ids continue from the segments' limits", what);
  return true;
}

std::error_code JobLog::Impl::write_id_lease(std::uint64_t limit) {
  std::string rec;
  log::append_record(&rec, log::RecordType::kIdLimit, codec::encode_u64(limit));
  return log::replace_file(*fs, opt.dir + "/" + kIdLeaseFile, opt.dir, rec);
}

std::error_code JobLog::Impl::ensure_id_lease() {
  if (next_id < id_limit) return {};
  // Every kIdLease ids the owner thread writes the file and waits for its two syncs; the ids
  // of the lease then cost nothing until it runs out. A restart skips what was left of it.
  const std::uint64_t limit = next_id + kIdLease;
  if (auto ec = write_id_lease(limit)) {
    if (ec == std::errc::no_space_on_device) {
      enter_disk_full();
      return LogError::kDiskFull;
    }
    // Not the log's failure: its records are fine, and the next put tries the file again.
    if (!lease_failing) {
      logger()->error("job log in {}: cannot write the id lease ({}); puts refused until it works",
                      opt.dir, ec.message());
    }
    lease_failing = true;
    return LogError::kFailed;
  }
  if (lease_failing) logger()->info("job log in {}: the id lease is written again", opt.dir);
  lease_failing = false;
  id_limit = limit;
  return {};
}

}  // namespace wheel::jobs
