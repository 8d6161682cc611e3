// SPDX-License-Identifier: Apache-2.0
// wheel-jobs: beanstalkd's protocol on wheel::jobs. Option parsing and wiring only: the job
// model is wheel::jobs::JobQueue, the protocol the BeanstalkDispatcher, the sockets a
// wheel::net::TcpServer with the JobsHandler.
#include <sys/utsname.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <random>
#include <string>

#include "cli_options.h"
#include "cli_style.h"
#include "jobs_handler.h"
#include "jobs_metrics.h"
#include "json_log.h"
#include "wheel/jobs/beanstalk_protocol.h"
#include "wheel/net/socket_address.h"
#include "wheel/net/tcp_server.h"
#include "wheel/server/metrics_http_server.h"
#include "wheel/version.h"

namespace {

namespace jobs = wheel::jobs;
using wheel::cli::add_count;

constexpr std::uint64_t kMaxConnections = 1'000'000;
constexpr std::uint64_t kMaxJobsLimit = std::uint64_t{1} << 32;
constexpr std::uint64_t kMaxMemoryLimit = std::uint64_t{1} << 40;  // 1 TiB of bodies

int usage_error(const std::string& message) {
  std::fprintf(stderr, "wheel-jobs: %s\nRun with --help for more information.\n", message.c_str());
  return 2;
}

std::string random_id() {
  std::random_device device;
  char text[17];
  std::snprintf(text, sizeof text, "%08x%08x", device(), device());
  return text;
}

jobs::ServerInfo server_info(std::uint32_t max_job_size) {
  jobs::ServerInfo info;
  info.version = wheel::kVersion;
  info.id = random_id();
  info.pid = getpid();
  info.max_job_size = max_job_size;
  utsname names{};
  if (uname(&names) == 0) {
    info.hostname = names.nodename;
    info.os = names.version;
    info.platform = names.machine;
  }
  return info;
}

int run(int argc, char** argv) {
  std::string host = "127.0.0.1";
  std::uint16_t port = 11300;
  std::string dir;
  std::string fsync;
  std::uint32_t max_job_size = jobs::beanstalk::kDefaultMaxJobSize;
  std::uint64_t max_connections = 100'000;
  jobs::JobQueueLimits limits;
  std::uint16_t metrics_port = 0;
  std::string metrics_host = "127.0.0.1";
  std::string log_level = "info";
  std::string log_format = "text";

  CLI::App app{"wheel-jobs: a job queue that speaks beanstalkd's protocol, on a timing wheel"};
  wheel::cli::apply_style(app);
  app.set_version_flag("--version", std::string("wheel-jobs ") + wheel::kVersion,
                       "print the version and exit");
  app.add_option("--host", host, "IPv4 or IPv6 address or host name to listen on")
      ->type_name(wheel::cli::kTypeAddress)
      ->capture_default_str();
  add_count(app, "--port", &port, "TCP port; 0 picks a free one", 0, 65535);
  app.add_option("--dir", dir, "data directory for the durable job log (not yet supported)")
      ->type_name("DIR");
  app.add_option("--fsync", fsync, "with --dir: always, MS (milliseconds) or never")
      ->type_name("POLICY");
  add_count(app, "--max-job-size", &max_job_size, "largest job body in bytes", 0,
            jobs::beanstalk::kMaxMaxJobSize);
  add_count(app, "--max-connections", &max_connections,
            "open client connections; past it a client is closed at once", 1, kMaxConnections);
  add_count(app, "--max-jobs", &limits.max_jobs,
            "jobs held in every state; past it put answers OUT_OF_MEMORY", 1, kMaxJobsLimit);
  add_count(app, "--max-memory", &limits.max_body_bytes,
            "bytes of job bodies held; past it put answers OUT_OF_MEMORY", 1, kMaxMemoryLimit);
  add_count(app, "--max-tubes", &limits.max_tubes,
            "tubes at once; past it use and watch answer OUT_OF_MEMORY", 1, 10'000'000);
  add_count(app, "--metrics-port", &metrics_port,
            "serve Prometheus metrics at http://METRICS-HOST:PORT/metrics; 0 turns it off", 0,
            65535);
  app.add_option("--metrics-host", metrics_host,
                 "IPv4 or IPv6 address or host name of the metrics endpoint")
      ->type_name(wheel::cli::kTypeAddress)
      ->capture_default_str();
  wheel::cli::add_logging_options(app, log_level, log_format);
  app.footer(
      "Protocol: beanstalkd 1.12 (its protocol.txt), plus decimal durations: put 0 0.250 60 5 "
      "delays by 250 ms.\nJobs are held in memory: a restart loses them (--dir is not yet "
      "supported).");

  if (const auto exit_status = wheel::cli::parse_command_line(app, argc, argv, "wheel-jobs")) {
    return *exit_status;
  }
  if (!dir.empty()) {
    return usage_error(
        "--dir: not yet supported: the durable job log is not part of this build; "
        "run without --dir (memory only)");
  }
  if (!fsync.empty()) return usage_error("--fsync: needs --dir, which is not yet supported");
  try {
    wheel::net::resolve_address(host, port);
  } catch (const std::exception& e) {
    return usage_error("--host: " + std::string(e.what()));
  }
  if (metrics_port != 0) {
    try {
      wheel::net::resolve_address(metrics_host, metrics_port);
    } catch (const std::exception& e) {
      return usage_error("--metrics-host: " + std::string(e.what()));
    }
  }
  wheel::apps::install_program_logger("wheel-jobs", log_level, log_format);

  try {
    jobs::MemoryOnlyJournal journal;
    jobs::JobQueue queue(limits, &journal);
    jobs::BeanstalkDispatcher dispatcher(queue, server_info(max_job_size));
    wheel::jobs_app::JobsHandler handler(queue, journal, dispatcher, max_job_size);
    wheel::net::TcpServerOptions options;
    options.host = host;
    options.port = port;
    options.framing = wheel::net::Framing::kBytes;
    options.max_connections = max_connections;
    // A reply holds at most one job body; room for it plus pipelined small replies.
    options.max_output = std::size_t{max_job_size} + (std::size_t{1} << 20);
    wheel::net::TcpServer server(options, handler);
    std::uint16_t bound = 0;
    try {
      bound = server.listen();
    } catch (const std::exception& e) {
      spdlog::error("wheel-jobs: cannot listen on {}: {}", wheel::net::format_host_port(host, port),
                    e.what());
      return 1;
    }
    handler.attach(server);
    std::unique_ptr<wheel::server::MetricsHttpServer> metrics;
    if (metrics_port != 0) {
      wheel::server::MetricsHttpOptions metrics_options;
      metrics_options.host = metrics_host;
      metrics_options.port = metrics_port;
      metrics = std::make_unique<wheel::server::MetricsHttpServer>(
          server.loop(), metrics_options,
          [&] { return wheel::jobs_app::render_metrics(dispatcher, queue); });
      try {
        metrics->listen();
      } catch (const std::exception& e) {
        spdlog::error("wheel-jobs: cannot serve metrics on {}: {}",
                      wheel::net::format_host_port(metrics_host, metrics_port), e.what());
        metrics->close();
        server.shutdown();
        server.run();
        return 1;
      }
      handler.on_shutdown_also([&] { metrics->close(); });
    }
    server.handle_signals();
    std::printf("listening on %s\n", wheel::net::format_host_port(host, bound).c_str());
    std::fflush(stdout);
    server.run();
    spdlog::info("wheel-jobs: stopped");
    return 0;
  } catch (const std::exception& e) {
    spdlog::error("wheel-jobs: {}", e.what());
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "wheel-jobs: %s\n", e.what());
    return 1;
  }
}
