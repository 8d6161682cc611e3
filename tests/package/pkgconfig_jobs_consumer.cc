// SPDX-License-Identifier: Apache-2.0
// Built by check_pkgconfig.sh with only `pkg-config --cflags --libs wheeljobsserver` (and by
// check_package.sh against wheel::jobs_server): writes one job to a job log in a fresh temporary
// directory, reopens it and reads it back; then serves beanstalkd's protocol with the
// BeanstalkServerHandler on a wheel::net::TcpServer and puts one job from a client thread.
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include <wheel/jobs/server/beanstalk_server_handler.h>
#include <wheel/version.h>

#include "job_log_round_trip.h"
#include "loopback_exchange.h"

namespace {

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
