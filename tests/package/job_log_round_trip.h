// SPDX-License-Identifier: Apache-2.0
// log_round_trip(): one job written to a job log in a fresh temporary directory, the log
// reopened and the job read back (the consumers of wheeljobs and wheeljobsserver).
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>

#include <wheel/jobs/log/job_log.h>

inline bool log_round_trip() {
  std::string dir = (std::filesystem::temp_directory_path() / "wheeljobs-consumer.XXXXXX").string();
  if (::mkdtemp(dir.data()) == nullptr) return false;
  wheel::jobs::JobLogOptions options;
  options.dir = dir + "/log";
  std::string error;
  wheel::jobs::Recovered recovered;
  {
    auto log = wheel::jobs::JobLog::open(options, &recovered, &error);
    if (!log) return false;
    wheel::jobs::PutRecord job;
    if (log->allocate_id(&job.id)) return false;
    job.body = "hello";
    wheel::jobs::JobLog::Lsn lsn = 0;
    if (log->put(job, &lsn)) return false;
    log->commit();
    if (log->sync_now()) return false;
  }
  auto log = wheel::jobs::JobLog::open(options, &recovered, &error);
  const bool ok = log && recovered.jobs.size() == 1 && recovered.jobs[0].body == "hello";
  log.reset();
  std::filesystem::remove_all(dir);
  return ok;
}
