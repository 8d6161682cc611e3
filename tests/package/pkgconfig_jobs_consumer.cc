// SPDX-License-Identifier: Apache-2.0
// Built by check_pkgconfig.sh with only `pkg-config --cflags --libs wheeljobs` (and by
// check_package.sh against wheel::jobs): writes one job to a job log in a fresh temporary
// directory, reopens it and reads it back; then serves beanstalkd's protocol with the
// BeanstalkServerHandler on a wheel::net::TcpServer and puts one job from a client thread.
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include <wheel/jobs/beanstalk_server_handler.h>
#include <wheel/jobs/job_log.h>
#include <wheel/version.h>

#include "loopback_exchange.h"

namespace {

bool log_round_trip() {
  std::string dir = (std::filesystem::temp_directory_path() / "wheeljobs-consumer.XXXXXX").string();
  if (::mkdtemp(dir.data()) == nullptr) return false;
  wheel::jobs::JobLogOptions options;
  options.dir = dir + "/log";
  std::string error;
  wheel::jobs::Recovered recovered;
  {
    auto log = wheel::jobs::JobLog::open(options, &recovered, &error);
    if (!log) return false;
    wheel::jobs::StoredJob job;
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

// The reply of one put to a beanstalkd server embedded here.
std::string serve_one_put() {
  wheel::jobs::JobQueue queue;
  wheel::jobs::MemoryOnlyJournal journal;
  wheel::jobs::BeanstalkDispatcher dispatcher(queue, {});
  wheel::jobs::BeanstalkServerHandler handler(queue, journal, dispatcher);
  wheel::net::TcpServerOptions options;  // 127.0.0.1, port 0
  options.framing = wheel::net::Framing::kBytes;
  wheel::net::TcpServer server(options, handler);
  const std::uint16_t port = server.listen();
  handler.attach(server);
  return exchange_once(server, port, "put 0 0 60 5\r\nhello\r\n");
}

}  // namespace

int main() {
  if (!log_round_trip()) return 1;
  const std::string reply = serve_one_put();
  if (reply != "INSERTED 1\r\n") return 1;
  std::printf("job log written and read back, a put served; wheeltimer %s\n", wheel::kVersion);
  return 0;
}
