// SPDX-License-Identifier: Apache-2.0
// Built by check_pkgconfig.sh with only `pkg-config --cflags --libs wheeljobs`: writes one job
// to a job log in the directory given, reopens it and prints what it found.
#include <cstdio>
#include <string>

#include <wheel/jobs/job_log.h>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  wheel::jobs::JobLogOptions options;
  options.dir = argv[1];
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
  if (!log || recovered.jobs.size() != 1) return 1;
  std::printf("pkgconfig-jobs-consumer: %zu job, body %s\n", recovered.jobs.size(),
              recovered.jobs[0].body.c_str());
  return 0;
}
