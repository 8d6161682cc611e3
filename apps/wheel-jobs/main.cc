// SPDX-License-Identifier: Apache-2.0
// wheel-jobs: beanstalkd's protocol on wheel::jobs. Option parsing and wiring only: the job
// model is wheel::jobs::JobQueue, the protocol the BeanstalkDispatcher, the sockets a
// wheel::net::TcpServer with the BeanstalkServerHandler.
#include <sys/utsname.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli_options.h"
#include "cli_style.h"
#include "cluster_shards.h"
#include "http_endpoint.h"
#include "jobs_metrics.h"
#include "json_log.h"
#include "wheel/jobs/beanstalk/beanstalk_protocol.h"
#include "wheel/jobs/console/queue_console.h"
#include "wheel/jobs/console/redis_console.h"
#include "wheel/jobs/durable/durable_journal.h"
#include "wheel/jobs/fleet/redis_jobs_handler.h"
#include "wheel/jobs/fleet/redis_shards.h"
#include "wheel/jobs/log/job_log.h"
#include "wheel/jobs/server/beanstalk_server_handler.h"
#include "wheel/logger.h"
#include "wheel/net/socket_address.h"
#include "wheel/net/tcp_server.h"
#include "wheel/redis/redis_cluster.h"
#include "wheel/redis/redis_endpoint.h"
#include "wheel/redis/redis_first_contact.h"
#include "wheel/redis/redis_sentinel.h"
#include "wheel/server/metrics_http_server.h"
#include "wheel/version.h"

namespace {

namespace jobs = wheel::jobs;
using wheel::cli::add_count;

constexpr std::uint64_t kMaxConnections = 1'000'000;
constexpr std::uint64_t kMaxSyncIntervalMs = 3'600'000;  // the log's bound
constexpr std::uint64_t kMaxJobsLimit = std::uint64_t{1} << 32;
constexpr std::uint64_t kMaxMemoryLimit = std::uint64_t{1} << 40;  // 1 TiB of bodies
// Four series per tube: 10,000 tubes would make one scrape 40,000 lines.
constexpr std::uint32_t kMaxMetricsTubes = 1000;
// How long a node waits for its store's first answer before it listens (--store-connect-timeout).
constexpr std::chrono::milliseconds kDefaultStoreConnectTimeout{10'000};

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

struct ServeOptions {
  std::string host;
  std::uint16_t port = 0;
  std::uint32_t unix_mode = 0660;
  jobs::JobQueueLimits limits;
  std::uint32_t max_job_size = 0;
  std::uint64_t max_connections = 0;
  wheel::jobs_app::HttpEndpointOptions http;  // port 0: no HTTP listener
  std::uint32_t metrics_tubes = 0;
};

// The TCP side of either server: beanstalkd's byte stream on host:port.
wheel::net::TcpServerOptions tcp_options(const ServeOptions& o) {
  wheel::net::TcpServerOptions options;
  options.host = o.host;
  options.port = o.port;
  options.unix_mode = o.unix_mode;
  options.framing = wheel::net::Framing::kBytes;
  options.max_connections = o.max_connections;
  // The handlers stop running a connection's requests at 1 MiB of replies not yet taken
  // (max_queued_output): room for that plus one more reply, one job body and its header line. A
  // client past it never read and met a reply larger than a body (list-tubes, stats).
  options.max_output = std::size_t{o.max_job_size} + (std::size_t{1} << 20) + 4096;
  return options;
}

// The server on `loop` with `journal` (and `durable_journal` when durable) until SIGTERM/SIGINT:
// 0, or 1 when it cannot start.
int serve_on(uv_loop_t* loop, const ServeOptions& o, jobs::QueueJournal& journal,
             jobs::DurableJournal* durable_journal, jobs::Recovered* recovered) {
  // uv_now() is the loop's time when it was made, before the log was read: without this, the
  // queue's clock would start behind the wall clock the restore reads below by the recovery's
  // length, and every restored delayed job would come due early by that much.
  uv_update_time(loop);
  jobs::JobQueue queue(o.limits, &journal, jobs::Millis(static_cast<std::int64_t>(uv_now(loop))));
  if (recovered != nullptr) {
    durable_journal->restore_deferred(queue, *recovered,
                                      std::chrono::duration_cast<std::chrono::milliseconds>(
                                          std::chrono::system_clock::now().time_since_epoch())
                                          .count());
  }
  jobs::BeanstalkDispatcher dispatcher(queue, server_info(o.max_job_size));
  jobs::BeanstalkServerOptions handler_options;
  handler_options.max_job_size = o.max_job_size;
  jobs::BeanstalkServerHandler handler(queue, journal, dispatcher, handler_options);
  wheel::net::TcpServer server(loop, tcp_options(o), handler);
  std::uint16_t bound = 0;
  try {
    bound = server.listen();
  } catch (const std::exception& e) {
    wheel::logger()->error("wheel-jobs: cannot listen on {}: {}",
                           wheel::net::format_host_port(o.host, o.port), e.what());
    server.shutdown();
    uv_run(loop, UV_RUN_DEFAULT);
    return 1;
  }
  handler.attach(server);
  jobs::console::QueueConsole console(
      queue, journal, durable_journal != nullptr ? "log" : "memory",
      [&](const std::function<void()>& change) { handler.run_outside(change); },
      [&] { return server.counters().connections; });
  std::unique_ptr<wheel::jobs_app::HttpEndpoint> http;
  if (o.http.port != 0) {
    http = std::make_unique<wheel::jobs_app::HttpEndpoint>(
        loop, o.http,
        [&](wheel::server::MetricsHttpServer::Reply reply) {
          reply(wheel::jobs_app::render_metrics(
              dispatcher, queue, durable_journal != nullptr ? &durable_journal->log() : nullptr,
              o.metrics_tubes, server.counters()));
        },
        console);
    handler.on_shutdown_also([&] { http->close(); });
    try {
      http->listen();
    } catch (const std::exception& e) {
      wheel::logger()->error("wheel-jobs: {}", e.what());
      server.shutdown();
      uv_run(loop, UV_RUN_DEFAULT);
      return 1;
    }
  }
  server.handle_signals();
  std::printf("listening on %s\n", wheel::net::format_host_port(o.host, bound).c_str());
  std::fflush(stdout);
  uv_run(loop, UV_RUN_DEFAULT);
  wheel::logger()->info("wheel-jobs: stopped");
  return 0;
}

// Serves from Redis (--store): every job in Redis, so any number of processes share the tubes.
// `reach_within`: how long to wait for Redis's first answer before `listening on` (0: not at all).
// With `sentinel` (redis-sentinel://) both connections, the commands' and the events', go to the
// primary the sentinels name and follow it through failovers. With `cluster`
// (redis-cluster://) the commands go through a RedisCluster over `shards` shards (0: the count
// kept in the cluster, else the default), the events' connection to the first seed (a cluster
// carries every PUBLISH to every node).
int serve_redis(const ServeOptions& o, jobs::RedisClientOptions client_options,
                const std::optional<jobs::RedisSentinelEndpoint>& sentinel,
                const std::optional<jobs::RedisClusterEndpoint>& cluster, std::uint32_t shards,
                std::chrono::milliseconds max_scan_interval,
                std::chrono::milliseconds reach_within) {
  uv_loop_t loop;
  uv_loop_init(&loop);
  int status = 1;
  {
    const std::string store_name = sentinel  ? jobs::format_redis_sentinel_url(*sentinel)
                                   : cluster ? jobs::format_redis_cluster_url(*cluster)
                                             : jobs::format_redis_url(client_options.endpoint);
    std::optional<jobs::RedisCluster> nodes;
    jobs::RedisStoreOptions store_options;
    if (cluster) {
      jobs::RedisClusterOptions cluster_options;
      cluster_options.endpoint = *cluster;
      cluster_options.node = client_options;
      cluster_options.name = "wheel-jobs: redis cluster";
      client_options.endpoint = cluster->node;
      client_options.endpoint.host = cluster->seeds.front().host;
      client_options.endpoint.port = cluster->seeds.front().port;
      // The shard count first, on a cluster client of its own: the store's cluster must have
      // the store's scripts before it starts (they are loaded as each node's connection opens;
      // else every script goes as EVAL, its whole text each time).
      wheel::jobs_app::ClusterShards settled;
      {
        jobs::RedisCluster probe(&loop, cluster_options);
        probe.start();
        settled = wheel::jobs_app::settle_cluster_shards(
            &loop, probe, store_options.prefix, shards,
            reach_within.count() > 0 ? reach_within : kDefaultStoreConnectTimeout);
        probe.stop();
        uv_run(&loop, UV_RUN_DEFAULT);  // nothing else runs yet: until its handles closed
      }
      if (settled.shards == 0) {
        wheel::logger()->error("wheel-jobs: the store at {}: {}", store_name, settled.error);
        status = settled.exit_status;
      }
      store_options.shards = settled.shards;
      nodes.emplace(&loop, cluster_options);  // started once the store preloaded its scripts
      if (settled.shards == 0) nodes->stop();
    }
    std::optional<jobs::RedisSentinel> sentinels;
    if (sentinel) {
      jobs::RedisSentinelOptions sentinel_options;
      sentinel_options.endpoint = *sentinel;
      sentinel_options.name = "wheel-jobs: redis sentinel";
      sentinels.emplace(&loop, sentinel_options);
      client_options.endpoint = sentinel->primary;
    }
    client_options.name = "wheel-jobs: redis";
    jobs::RedisClient client(&loop, client_options);
    client_options.name = "wheel-jobs: redis events";
    jobs::RedisClient events(&loop, client_options);
    if (sentinels) {
      sentinels->follow(client);
      sentinels->follow(events);
    }
    if (cluster && store_options.shards == 0) {
      uv_run(&loop, UV_RUN_DEFAULT);
      client.stop();
      events.stop();
      uv_run(&loop, UV_RUN_DEFAULT);
      uv_loop_close(&loop);
      return status;
    }
    jobs::RedisStore store =
        nodes ? jobs::RedisStore(*nodes, store_options) : jobs::RedisStore(client, store_options);
    jobs::RedisJobsOptions options;
    options.max_job_size = o.max_job_size;
    options.info = server_info(o.max_job_size);
    options.max_scan_interval = max_scan_interval;
    jobs::RedisJobsHandler handler(store, events, options);
    wheel::net::TcpServer server(&loop, tcp_options(o), handler);
    jobs::console::RedisConsole console(store, handler);
    std::unique_ptr<wheel::jobs_app::HttpEndpoint> metrics;
    if (o.http.port != 0) {
      // Each scrape reads the fleet's counts from Redis (one script), then renders.
      metrics = std::make_unique<wheel::jobs_app::HttpEndpoint>(
          &loop, o.http,
          [&](wheel::server::MetricsHttpServer::Reply reply) {
            store.totals([&, reply = std::move(reply)](jobs::StoreTotals&& t) {
              reply(wheel::jobs_app::render_redis_metrics(
                  handler, t.status == jobs::StoreStatus::kOk ? &t : nullptr,
                  nodes ? events : client, events, sentinels ? &*sentinels : nullptr,
                  server.counters()));
            });
          },
          console);
    }
    handler.on_shutdown_also([&] {
      if (metrics) metrics->close();
      client.stop();
      events.stop();
      if (sentinels) sentinels->stop();
      if (nodes) nodes->stop();
    });
    try {
      if (sentinels) sentinels->start();
      if (nodes) nodes->start();
      if (!nodes) client.start();
      events.start();
      if (nodes) {
        wheel::logger()->info("wheel-jobs: {} shards over {} primaries", store.shards(),
                              nodes->map().primaries().size());
      } else if (reach_within.count() > 0) {
        const std::string why = jobs::wait_for_first_reply(&loop, client, reach_within);
        if (!why.empty()) {
          throw std::runtime_error("the store at " + store_name + " did not answer within " +
                                   std::to_string(reach_within.count()) +
                                   " ms (--store-connect-timeout): " + why);
        }
        // A cluster node answers PING too: ask before listening, within the same bound.
        std::optional<std::string> refusal;
        jobs::check_not_a_cluster_node(&loop, client,
                                       [&](const std::string& why) { refusal = why; });
        uv_update_time(&loop);
        const std::uint64_t deadline = uv_now(&loop) + reach_within.count();
        while (!refusal && uv_now(&loop) < deadline) uv_run(&loop, UV_RUN_ONCE);
        if (refusal && !refusal->empty()) {
          throw std::runtime_error("the store at " + store_name + ": " + *refusal);
        }
      } else if (!nodes) {
        // Listening at once: the refusal comes with Redis's first answer, and ends the node.
        jobs::check_not_a_cluster_node(&loop, client, [&](const std::string& why) {
          if (why.empty()) return;
          wheel::logger()->error("wheel-jobs: the store at {}: {}", store_name, why);
          status = 1;
          server.shutdown();
        });
      }
      std::uint16_t bound = 0;
      try {
        bound = server.listen();
      } catch (const std::exception& e) {
        throw std::runtime_error("cannot listen on " +
                                 wheel::net::format_host_port(o.host, o.port) + ": " + e.what());
      }
      if (metrics) metrics->listen();
      handler.attach(server);
      server.handle_signals();
      wheel::logger()->info("wheel-jobs: jobs in {}", store_name);
      std::printf("listening on %s\n", wheel::net::format_host_port(o.host, bound).c_str());
      std::fflush(stdout);
      status = 0;
    } catch (const std::exception& e) {
      wheel::logger()->error("wheel-jobs: {}", e.what());
      server.shutdown();
    }
    uv_run(&loop, UV_RUN_DEFAULT);
    if (metrics) metrics->close();
    client.stop();
    events.stop();
    if (sentinels) sentinels->stop();
    if (nodes) nodes->stop();
    uv_run(&loop, UV_RUN_DEFAULT);
    if (status == 0) wheel::logger()->info("wheel-jobs: stopped");
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
  return status;
}

// Opens the log (with `log_options`) or none, and serves. The loop is ours; the handler wakes
// it when the log's sync thread made changes durable.
int serve(const ServeOptions& o, jobs::JobLogOptions* log_options) {
  uv_loop_t loop;
  uv_loop_init(&loop);
  int status = 1;
  try {
    if (log_options == nullptr) {
      jobs::MemoryOnlyJournal journal;
      status = serve_on(&loop, o, journal, nullptr, nullptr);
    } else {
      log_options->load_bodies = false;  // bodies stay in the log: DurableJournal reads them back
      log_options->defer_jobs = true;    // straight from the log into the queue, never held twice
      jobs::Recovered recovered;
      std::string error;
      std::unique_ptr<jobs::JobLog> log = jobs::JobLog::open(*log_options, &recovered, &error);
      if (!log) {
        wheel::logger()->error("wheel-jobs: cannot open the job log in {}: {}", log_options->dir,
                               error);
      } else {
        wheel::logger()->info(
            "wheel-jobs: {} jobs recovered from {} ({} segments, {} bytes; {} torn bytes "
            "cut off)",
            recovered.live_jobs, log_options->dir, recovered.segments, recovered.bytes,
            recovered.torn_bytes);
        jobs::DurableJournal journal(*log, log_options->sync);
        status = serve_on(&loop, o, journal, &journal, &recovered);
        if (std::error_code e = log->sync_now()) {
          wheel::logger()->error("wheel-jobs: the last sync of the job log failed: {}",
                                 e.message());
          status = 1;
        }
      }
    }
  } catch (const std::exception& e) {
    wheel::logger()->error("wheel-jobs: {}", e.what());
    status = 1;
  }
  uv_run(&loop, UV_RUN_DEFAULT);  // closes what the handler left closing
  uv_loop_close(&loop);
  return status;
}

int run(int argc, char** argv) {
  std::string host = "127.0.0.1";
  std::uint16_t port = 11300;
  std::string dir;
  std::string fsync;
  std::string store_url;
  std::string sentinel_password;
  std::chrono::milliseconds max_scan_interval = jobs::RedisJobsOptions{}.max_scan_interval;
  std::chrono::milliseconds store_connect_timeout = kDefaultStoreConnectTimeout;
  jobs::RedisClientOptions client_options;
  std::uint32_t max_job_size = jobs::beanstalk::kDefaultMaxJobSize;
  std::uint64_t max_connections = 100'000;
  jobs::JobQueueLimits limits;
  wheel::jobs_app::HttpEndpointOptions http;
  bool no_console = false;
  std::uint32_t metrics_tubes = 100;
  std::string log_level = "info";
  std::string log_format = "text";
  std::string unix_mode_text = "660";

  CLI::App app{"wheel-jobs: a job queue that speaks beanstalkd's protocol, on a timing wheel"};
  wheel::cli::apply_style(app, "wheel-jobs", wheel::kVersion);
  app.add_option("--host", host,
                 "IPv4 or IPv6 address or host name to listen on, or unix:PATH for a unix-domain "
                 "socket (beanstalkd's -l unix:PATH; a stale socket file is replaced, one a "
                 "server answers on is refused; removed at exit)")
      ->type_name(wheel::cli::kTypeAddress)
      ->capture_default_str();
  app.add_option("--unix-mode", unix_mode_text,
                 "with --host unix:PATH: the socket file's permissions, octal, 0 to 777")
      ->type_name("MODE")
      ->capture_default_str();
  add_count(app, "--port", &port, "TCP port; 0 picks a free one", 0, 65535);
  app.add_option("--dir", dir,
                 "data directory of the durable job log (created if absent; locked: one server per "
                 "directory); none: memory only")
      ->type_name("DIR");
  app.add_option("--store", store_url,
                 "keep every job in Redis at redis://[[USER]:PASSWORD@]HOST:PORT[/DB] (PORT 1 "
                 "to 65535, default 6379; DB 0 to " +
                     std::to_string(jobs::kMaxRedisDb) +
                     "), or at the primary Redis Sentinel names: "
                     "redis-sentinel://[[USER]:PASSWORD@]HOST[:PORT][,HOST[:PORT]...][/DB]#MASTER "
                     "(the sentinels, PORT default 26379; USER, PASSWORD and DB are the "
                     "primary's; failovers are followed), shared by any number of wheel-jobs "
                     "processes; replaces --dir. Read from the environment variable "
                     "WHEEL_JOBS_STORE when not given, which keeps a password out of the process "
                     "list")
      ->type_name("URL")
      ->envname("WHEEL_JOBS_STORE");
  app.add_option(
         "--store-sentinel-password", sentinel_password,
         "with --store redis-sentinel://: the sentinels' own password (their "
         "requirepass), at most " +
             std::to_string(jobs::kMaxRedisCredential) +
             " bytes. Read from the environment variable WHEEL_JOBS_STORE_SENTINEL_PASSWORD "
             "when not given")
      ->type_name("PASSWORD")
      ->envname("WHEEL_JOBS_STORE_SENTINEL_PASSWORD");
  wheel::cli::add_duration(app, "--max-scan-interval", &max_scan_interval,
                           "with --store: the longest gap between two safety scans, the bound on "
                           "finding a job whose wake-up event was lost",
                           jobs::RedisJobsOptions{}.min_scan_interval, std::chrono::hours(1));
  wheel::cli::add_duration(app, "--store-connect-timeout", &store_connect_timeout,
                           "with --store: how long to wait at start-up for Redis's first answer "
                           "before listening; past it the node exits with 1 naming the store. 0: "
                           "listen at once and keep retrying",
                           std::chrono::milliseconds(0), std::chrono::hours(1));
  std::uint32_t store_shards = 0;
  add_count(app, "--store-shards", &store_shards,
            "with --store redis-cluster://: shards each tube spreads over (hash tags, each on "
            "one primary). Default: the count the fleet's data was first written with, else "
            "twice the primaries. Fixed for the life of the data",
            1, jobs::kMaxRedisShards);
  add_count(app, "--store-replicas", &client_options.replicas,
            "with --store: answer a change only once this many Redis replicas have it (WAIT); "
            "0: once the primary has it",
            0, jobs::kMaxRedisReplicas);
  wheel::cli::add_duration(app, "--store-replica-timeout", &client_options.replica_timeout,
                           "with --store-replicas: how long a change waits for the replicas "
                           "before its client gets INTERNAL_ERROR",
                           std::chrono::milliseconds(1), std::chrono::milliseconds(2000));
  app.add_option(
         "--fsync", fsync,
         "with --dir: always (a reply after its fdatasync, shared by concurrent changes), MS "
         "(reply at once, sync at most every MS ms, 1 to 3600000) or never (default always)")
      ->type_name("POLICY");
  add_count(app, "--max-job-size", &max_job_size, "largest job body in bytes", 0,
            jobs::beanstalk::kMaxMaxJobSize);
  std::uint64_t segment_size = jobs::JobLogOptions{}.segment_bytes;
  add_count(app, "--segment-size", &segment_size,
            "with --dir: bytes of one log segment file before the next starts", std::uint64_t{4096},
            std::uint64_t{1} << 30);
  bool skip_corrupt = false;
  app.add_flag("--skip-corrupt", skip_corrupt,
               "with --dir: start past a damaged record or a missing segment of the log (each "
               "logged with its file and offset) instead of refusing to start; the jobs in the "
               "damaged part are lost");
  add_count(app, "--max-connections", &max_connections,
            "open client connections; past it a client is closed at once", 1, kMaxConnections);
  add_count(app, "--max-jobs", &limits.max_jobs,
            "jobs held in every state; past it put answers OUT_OF_MEMORY", 1, kMaxJobsLimit);
  add_count(app, "--max-memory", &limits.max_body_bytes,
            "bytes of job bodies held; past it put answers OUT_OF_MEMORY", 1, kMaxMemoryLimit);
  add_count(app, "--max-tubes", &limits.max_tubes,
            "tubes at once; past it use and watch answer OUT_OF_MEMORY", 1, 10'000'000);
  add_count(app, "--http-port,--metrics-port", &http.port,
            "serve Prometheus metrics at http://HTTP-HOST:PORT/metrics and the web console at "
            "http://HTTP-HOST:PORT/ (--metrics-port: its old name); 0 turns it off",
            0, 65535);
  app.add_option("--http-host,--metrics-host", http.host,
                 "IPv4 or IPv6 address or host name of the HTTP listener; anything but loopback "
                 "needs --http-token")
      ->type_name(wheel::cli::kTypeAddress)
      ->capture_default_str();
  app.add_option("--http-token", http.token,
                 "the web console's token: every /api call and every change must carry it "
                 "(X-Wheel-Token), and the page asks for it; 16 to 256 letters, digits, '-', '_' "
                 "or '.'. Read from WHEEL_JOBS_HTTP_TOKEN when not given. Without it (loopback "
                 "only) a token made at start rides in the page")
      ->type_name("TOKEN")
      ->envname("WHEEL_JOBS_HTTP_TOKEN");
  app.add_flag("--http-read-only", http.read_only,
               "the web console shows everything and changes nothing (every action answers 403)");
  app.add_flag("--no-console", no_console, "serve /metrics only, no web console");
  add_count(app, "--metrics-tubes", &metrics_tubes,
            "per-tube job gauges for at most this many tubes, those holding the most jobs; 0: "
            "none",
            0, kMaxMetricsTubes);
  wheel::cli::add_logging_options(app, log_level, log_format);
  app.footer(
      "Protocol: beanstalkd 1.12 (its protocol.txt), plus decimal durations: put 0 0.250 60 5 "
      "delays by 250 ms.\nWith --dir every change is logged before its reply; without it jobs are "
      "held in memory only.");

  if (const auto exit_status = wheel::cli::parse_command_line(app, argc, argv, "wheel-jobs")) {
    return *exit_status;
  }
  std::optional<jobs::RedisEndpoint> endpoint;
  std::optional<jobs::RedisSentinelEndpoint> sentinel;
  std::optional<jobs::RedisClusterEndpoint> cluster;
  if (!store_url.empty()) {
    std::string error;
    if (store_url.starts_with("redis-sentinel://")) {
      sentinel = jobs::parse_redis_sentinel_url(store_url, &error);
      if (!sentinel) return usage_error("--store: " + error);
      if (sentinel_password.size() > jobs::kMaxRedisCredential) {
        return usage_error("--store-sentinel-password: must be at most " +
                           std::to_string(jobs::kMaxRedisCredential) + " bytes");
      }
      sentinel->sentinel_password = sentinel_password;
      endpoint = sentinel->primary;
    } else if (store_url.starts_with("redis-cluster://")) {
      // The URL is checked in full first, so a typo is told as such.
      cluster = jobs::parse_redis_cluster_url(store_url, &error);
      if (!cluster) return usage_error("--store: " + error);
      endpoint = cluster->node;
    } else {
      endpoint = jobs::parse_redis_url(store_url, &error);
      if (!endpoint) return usage_error("--store: " + error);
    }
    for (const char* other : {"--dir", "--fsync", "--segment-size", "--skip-corrupt", "--max-jobs",
                              "--max-memory", "--max-tubes", "--metrics-tubes"}) {
      if (app.count(other) > 0) {
        return usage_error(
            std::string(other) +
            ": not available with --store or WHEEL_JOBS_STORE (the jobs live in Redis; "
            "bound them with Redis's maxmemory)");
      }
    }
  }
  if (store_url.empty() && app.count("--max-scan-interval") > 0) {
    return usage_error("--max-scan-interval: needs --store (it bounds the Redis store's scan)");
  }
  for (const char* option :
       {"--store-replicas", "--store-replica-timeout", "--store-connect-timeout"}) {
    if (store_url.empty() && app.count(option) > 0) {
      return usage_error(std::string(option) + ": needs --store (replicas of the Redis store)");
    }
  }
  if (!cluster && app.count("--store-shards") > 0) {
    return usage_error(
        "--store-shards: needs --store redis-cluster://... (one Redis holds one shard)");
  }
  if (!sentinel && !sentinel_password.empty()) {
    return usage_error(
        "--store-sentinel-password: needs --store redis-sentinel://... (the sentinels it logs in "
        "to)");
  }
  jobs::JobLogOptions log_options;
  log_options.dir = dir;
  log_options.segment_bytes = segment_size;
  if (dir.empty() && app.count("--segment-size") > 0) {
    return usage_error("--segment-size: needs --dir (the log's segments)");
  }
  log_options.skip_corrupt = skip_corrupt;
  if (dir.empty() && skip_corrupt) {
    return usage_error("--skip-corrupt: needs --dir (the log it would start past damage in)");
  }
  if (!fsync.empty()) {
    if (dir.empty()) return usage_error("--fsync: needs --dir (without it jobs are memory only)");
    if (fsync == "always") {
      log_options.sync = jobs::SyncPolicy::kAlways;
    } else if (fsync == "never") {
      log_options.sync = jobs::SyncPolicy::kNever;
    } else if (const std::string bad =
                   wheel::apps::check_whole_number(fsync, 1, kMaxSyncIntervalMs);
               bad.empty()) {
      log_options.sync = jobs::SyncPolicy::kInterval;
      log_options.sync_interval_ms = static_cast<std::uint32_t>(std::stoul(fsync));
    } else {
      return usage_error(
          "--fsync: must be always, never or a whole number of milliseconds from 1 "
          "to " +
          std::to_string(kMaxSyncIntervalMs) + ", got '" + fsync + "'");
    }
  }
  try {
    wheel::net::resolve_address(host, port);
  } catch (const std::exception& e) {
    return usage_error("--host: " + std::string(e.what()));
  }
  const std::optional<std::uint32_t> unix_mode = wheel::apps::parse_unix_mode(unix_mode_text);
  if (!unix_mode) {
    return usage_error("--unix-mode: must be an octal mode from 0 to 777, got '" + unix_mode_text +
                       "'");
  }
  http.console = !no_console;
  http.max_job_size = max_job_size;
  std::vector<std::string> http_given;
  for (const char* option : {"--http-read-only", "--no-console"}) {
    if (app.count(option) > 0) http_given.emplace_back(option);
  }
  if (const std::string bad = wheel::jobs_app::check_http_options(http, http_given); !bad.empty()) {
    return usage_error(bad);
  }
  wheel::apps::install_program_logger("wheel-jobs", log_level, log_format);

  ServeOptions serve_options{host, port,         *unix_mode, limits, max_job_size, max_connections,
                             http, metrics_tubes};
  if (endpoint) {
    client_options.endpoint = *endpoint;
    return serve_redis(serve_options, client_options, sentinel, cluster, store_shards,
                       max_scan_interval, store_connect_timeout);
  }
  return serve(serve_options, dir.empty() ? nullptr : &log_options);
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
