// SPDX-License-Identifier: Apache-2.0
// Built by check_pkgconfig.sh with only `pkg-config --cflags --libs wheeljobs`: writes one job
// to a job log in a fresh temporary directory, reopens it and prints what it found.
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include <wheel/jobs/job_log.h>
#include <wheel/version.h>

int main() {
  std::string dir = (std::filesystem::temp_directory_path() / "wheeljobs-consumer.XXXXXX").string();
  if (::mkdtemp(dir.data()) == nullptr) return 1;
  wheel::jobs::JobLogOptions options;
  options.dir = dir + "/log";
  std::string error;
  wheel::jobs::Recovered recovered;
  {
    auto log = wheel::jobs::JobLog::open(options, &recovered, &error);
    if (!log) return 1;
    wheel::jobs::StoredJob job;
    if (log->allocate_id(&job.id)) return 1;
    job.body = "hello";
    wheel::jobs::JobLog::Lsn lsn = 0;
    if (log->put(job, &lsn)) return 1;
    log->commit();
    if (log->sync_now()) return 1;
  }
  auto log = wheel::jobs::JobLog::open(options, &recovered, &error);
  const bool ok = log && recovered.jobs.size() == 1 && recovered.jobs[0].body == "hello";
  log.reset();
  std::filesystem::remove_all(dir);
  if (!ok) return 1;
  std::printf("job log written and read back, wheeltimer %s\n", wheel::kVersion);
  return 0;
}
