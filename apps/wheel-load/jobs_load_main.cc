// SPDX-License-Identifier: Apache-2.0
// wheel-jobs-load: the load client of job servers. `run` drives one server with one phase
// (jobs_load.h); `compare` runs the side-by-side comparison of scripts/compare-jobs.sh
// (jobs_compare.h); `demo` is the durable-jobs demo of scripts/run-demo.sh (jobs_demo.h).
// Option parsing and wiring only.
#include <sys/resource.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <string>

#include <spdlog/spdlog.h>

#include "cli_options.h"
#include "cli_style.h"
#include "json_log.h"
#include "wheel/load/jobs_compare.h"
#include "wheel/load/jobs_demo.h"
#include "wheel/load/jobs_load.h"
#include "wheel/load/jobs_load_report.h"
#include "wheel/load/redis_deliver.h"
#include "wheel/logger.h"
#include "wheel/version.h"

namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using wheel::cli::add_count;
using wheel::cli::add_duration;
namespace load = wheel::load;

void log_progress(const std::string& line) {
  wheel::logger()->info("{}", line);
}

int run_one(load::JobsLoadConfig& c, const std::string& phase, const std::string& json_path) {
  c.phase = phase == "lateness" ? load::JobsPhase::kLateness : load::JobsPhase::kPut;
  if (const std::string bad = load::check_jobs_load(c); !bad.empty()) {
    std::fprintf(stderr, "wheel-jobs-load: %s\n", bad.c_str());
    return 2;
  }
  c.progress = log_progress;
  const load::JobsLoadResult r = load::run_jobs_load(c);
  const json j = load::jobs_load_json(c, r);
  if (!json_path.empty()) {
    std::ofstream out(json_path);
    out << j.dump() << '\n';
    if (!out) {
      std::fprintf(stderr, "wheel-jobs-load: cannot write '%s'\n", json_path.c_str());
      return 1;
    }
  }
  std::printf("%s\n", j.dump().c_str());
  if (!r.error.empty()) {
    wheel::logger()->error("wheel-jobs-load: {}", r.error);
    return 1;
  }
  return 0;
}

int compare(load::JobsCompareConfig& c, const std::string& jsonl, const std::string& table) {
  std::ofstream lines;
  if (!jsonl.empty()) {
    lines.open(jsonl, std::ios::app);
    if (!lines) {
      std::fprintf(stderr, "wheel-jobs-load: cannot open '%s' for writing\n", jsonl.c_str());
      return 1;
    }
  }
  c.emit = [&](const json& j) {
    if (lines.is_open()) lines << j.dump() << std::endl;  // each line as it is measured
    if (!j.contains("summary")) wheel::logger()->info("{}", j.dump());
  };
  c.progress = log_progress;
  try {
    const json summary = load::run_jobs_compare(c);
    const std::string text = load::format_goal_table(summary);
    std::printf("%s", text.c_str());
    if (!table.empty()) {
      std::ofstream out(table);
      out << text;
      if (!out) {
        std::fprintf(stderr, "wheel-jobs-load: cannot write '%s'\n", table.c_str());
        return 1;
      }
    }
  } catch (const std::exception& e) {
    wheel::logger()->error("wheel-jobs-load: {}", e.what());
    return 1;
  }
  return 0;
}

// redis-deliver: prints READY on stderr once configured (a benchmark's driver waits for it),
// then one JSON line with the figures; exit 1 unless every job was delivered.
int deliver(load::RedisDeliverConfig& c) {
  c.progress = log_progress;
  std::fputs("READY\n", stderr);
  const load::RedisDeliverResult r = load::run_redis_deliver(c);
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  const double cpu = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                     static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  const nlohmann::json j = load::redis_deliver_json(c, r, cpu);
  std::printf("%s\n", j.dump().c_str());
  return r.complete ? 0 : 1;
}

// demo: the report on stdout; exit 0 only when nothing acknowledged was lost or early.
int demo(load::JobsDemoConfig& c) {
  if (const std::string bad = load::check_jobs_demo(c); !bad.empty()) {
    std::fprintf(stderr, "wheel-jobs-load: %s\n", bad.c_str());
    return 2;
  }
  c.progress = log_progress;
  const load::JobsDemoResult r = load::run_jobs_demo(c);
  std::fputs(load::format_jobs_demo(c, r).c_str(), stdout);
  return r.passed() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "wheel-jobs-load: pipelined load of job servers (beanstalkd protocol or a Redis "
      "delay queue), and their side-by-side comparison"};
  wheel::cli::apply_style(app, "wheel-jobs-load", wheel::kVersion);
  app.require_subcommand(1);
  std::string log_level = "info", log_format = "text";
  wheel::cli::add_logging_options(app, log_level, log_format);

  load::JobsLoadConfig c;
  std::string protocol = "beanstalk", phase = "put", json_path;
  std::chrono::milliseconds duration{0}, probe_span{10'000};
  std::uint32_t probe_rate = 200;
  CLI::App* run =
      app.add_subcommand("run", "drive one server with one phase and print its figures");
  run->fallthrough();  // --log-level and --log-format after the subcommand too
  run->add_option("--protocol", protocol, "beanstalk (wheel-jobs, beanstalkd) or redis")
      ->check(CLI::IsMember({"beanstalk", "redis"}))
      ->capture_default_str();
  run->add_option("--host", c.host, "numeric IPv4 or IPv6 address of the server")
      ->capture_default_str();
  add_count(*run, "--port", &c.port, "the server's TCP port", 1, 65535);
  run->add_option("--phase", phase,
                  "put (puts until --count or --duration) or lateness (probes and reservers, "
                  "beanstalk only)")
      ->check(CLI::IsMember({"put", "lateness"}))
      ->capture_default_str();
  add_count(*run, "--connections", &c.connections, "connections (lateness: reservers)", 1, 10'000);
  add_count(*run, "--window", &c.window, "requests in flight per connection", 1, 100'000);
  add_count(*run, "--count", &c.count, "puts to have acknowledged; 0: until --duration", 0,
            1'000'000'000);
  add_duration(*run, "--duration", &duration, "how long to run; 0: until --count", 0ms, 24h);
  add_count(*run, "--body-size", &c.body_size, "bytes of each job body", 1, 1u << 20);
  add_count(*run, "--delay-min", &c.delay_min_s, "shortest delay in seconds", 0,
            load::kMaxJobsDelayS);
  add_count(*run, "--delay-max", &c.delay_max_s, "longest delay in seconds (>= --delay-min)", 0,
            load::kMaxJobsDelayS);
  add_count(*run, "--ttr", &c.ttr_s, "time to run of each job in seconds", 1, load::kMaxJobsDelayS);
  add_count(*run, "--probe-rate", &probe_rate, "lateness: probes put per second", 1, 100'000);
  add_duration(*run, "--probe-span", &probe_span, "lateness: probes are put during this", 1s, 1h);
  run->add_option("--json", json_path, "also write the figures to this file")
      ->type_name(wheel::cli::kTypeFile);

  load::JobsCompareConfig cc;
  std::string jsonl, table;
  std::uint32_t compare_probe_rate = 300;
  std::chrono::milliseconds start_timeout{600'000};
  bool no_puts = false, no_pending = false, no_lateness = false;
  CLI::App* cmp = app.add_subcommand(
      "compare",
      "run wheel-jobs, beanstalkd and redis-server side by side (scripts/compare-jobs.sh)");
  cmp->fallthrough();
  wheel::cli::add_existing_file(*cmp, "--wheel-jobs", cc.wheel_jobs, "the wheel-jobs program");
  wheel::cli::add_existing_file(*cmp, "--beanstalkd", cc.beanstalkd, "Debian's beanstalkd");
  cmp->add_option("--redis-server", cc.redis_server, "Debian's redis-server; none: no Redis rows")
      ->check(CLI::ExistingFile | CLI::IsMember({"none"}));
  cmp->add_option("--work-dir", cc.work_dir, "scratch directory for the servers' data")->required();
  add_count(*cmp, "--rounds", &cc.rounds, "rounds; the server order rotates each round", 1, 100);
  add_count(*cmp, "--connections", &cc.connections, "connections per load", 1, 10'000);
  add_count(*cmp, "--window", &cc.window, "requests in flight per connection", 1, 100'000);
  add_count(*cmp, "--body-size", &cc.body_size, "bytes of each job body", 64, 1u << 20);
  add_count(*cmp, "--pending", &cc.pending, "jobs held pending in the pending suite", 1'000,
            100'000'000);
  add_duration(*cmp, "--put-duration", &cc.put_duration, "length of each puts/s run", 1s, 1h);
  add_duration(*cmp, "--lateness-duration", &cc.lateness_duration,
               "length of each lateness run (probes during its first --probe-span)", 5s, 1h);
  add_duration(*cmp, "--probe-span", &cc.probe_span, "probes are put during this", 1s, 1h);
  add_count(*cmp, "--probe-rate", &compare_probe_rate, "probes per second", 1, 100'000);
  add_count(*cmp, "--probe-delay-max", &cc.probe_delay_max_s, "longest probe delay in seconds", 1,
            3600);
  add_duration(*cmp, "--start-timeout", &start_timeout,
               "how long a server may take to answer after a spawn (a restart replays its log)", 1s,
               24h);
  cmp->add_flag("--no-puts", no_puts, "skip the puts/s suite");
  cmp->add_flag("--no-pending", no_pending, "skip the pending suite");
  cmp->add_flag("--no-lateness", no_lateness, "skip the lateness runs of the pending suite");
  cmp->add_option("--jsonl", jsonl, "append every measurement and the summary as JSON lines")
      ->type_name(wheel::cli::kTypeFile);
  cmp->add_option("--table", table, "write the goal table (Markdown) here")
      ->type_name(wheel::cli::kTypeFile);

  load::RedisDeliverConfig dc;
  CLI::App* rd = app.add_subcommand(
      "redis-deliver",
      "deliver due jobs through wheel::jobs's RedisStore in this process, no wheel-jobs node "
      "between (scripts/compare-fleet.sh)");
  rd->fallthrough();
  rd->add_option("--store", dc.url, "redis://HOST:PORT[/DB]")->required();
  rd->add_option("--prefix", dc.prefix, "the store's key prefix")->capture_default_str();
  rd->add_option("--tube", dc.tube, "the tube to reserve from")->capture_default_str();
  add_count(*rd, "--count", &dc.count, "jobs to deliver (reserve, then delete)", 1, 1'000'000'000);
  add_count(*rd, "--concurrency", &dc.concurrency, "reserves in flight", 1, 10'000);
  add_duration(*rd, "--timeout", &dc.timeout, "give up after this", 1s, 24h);

  load::JobsDemoConfig dm;
  std::chrono::milliseconds lost_after{dm.lost_after};
  CLI::App* dem = app.add_subcommand(
      "demo",
      "wheel-jobs --dir under delayed puts, kill -9 partway, restart, then every acknowledged job "
      "reserved, none early (scripts/run-demo.sh)");
  dem->fallthrough();
  wheel::cli::add_existing_file(*dem, "--wheel-jobs", dm.wheel_jobs, "the wheel-jobs program");
  add_count(*dem, "--jobs", &dm.jobs, "delayed jobs to have acknowledged", 2, 1'000'000);
  add_count(*dem, "--connections", &dm.connections, "connections putting, then reserving", 1,
            1'000);
  add_count(*dem, "--delay-min", &dm.delay_min_s, "shortest delay in seconds", 1, 3600);
  add_count(*dem, "--delay-max", &dm.delay_max_s, "longest delay in seconds (>= --delay-min)", 1,
            3600);
  add_count(*dem, "--kill-after", &dm.kill_after,
            "kill -9 the server at this many acknowledged puts (< --jobs); 0: half of --jobs", 0,
            999'999);
  add_duration(*dem, "--lost-after", &lost_after,
               "a job not reserved this long after the latest due time counts as lost", 1s, 1h);
  dem->add_option("--work-dir", dm.work_dir,
                  "scratch directory for the server's data and log (default: a temporary one, "
                  "removed when the demo passes)")
      ->type_name("DIR");

  if (const auto exit_status = wheel::cli::parse_command_line(app, argc, argv, "wheel-jobs-load")) {
    return *exit_status;
  }
  wheel::apps::install_program_logger("wheel-jobs-load", log_level, log_format);
  if (run->parsed()) {
    c.protocol = protocol == "redis" ? load::JobsProtocol::kRedis : load::JobsProtocol::kBeanstalk;
    c.duration = duration;
    c.probe_span = probe_span;
    c.probe_rate = probe_rate;
    if (c.delay_max_s < c.delay_min_s) {
      std::fprintf(stderr,
                   "wheel-jobs-load: --delay-max: must be at least --delay-min (%u), got %u\n",
                   c.delay_min_s, c.delay_max_s);
      return 2;
    }
    return run_one(c, phase, json_path);
  }
  if (dem->parsed()) {
    dm.lost_after = std::chrono::duration_cast<std::chrono::seconds>(lost_after);
    return demo(dm);
  }
  if (rd->parsed()) {
    try {
      return deliver(dc);
    } catch (const std::invalid_argument& e) {
      std::fprintf(stderr, "wheel-jobs-load: %s\n", e.what());
      return 2;
    }
  }
  if (cc.redis_server == "none") cc.redis_server.clear();  // JobsCompareConfig: empty = no Redis
  cc.puts_suite = !no_puts;
  cc.pending_suite = !no_pending;
  cc.lateness = !no_lateness;
  cc.probe_rate = compare_probe_rate;
  cc.start_timeout = std::chrono::duration_cast<std::chrono::seconds>(start_timeout);
  if (cc.lateness_duration < cc.probe_span + std::chrono::seconds(cc.probe_delay_max_s) + 2s) {
    std::fprintf(stderr,
                 "wheel-jobs-load: --lateness-duration: must be at least --probe-span + "
                 "--probe-delay-max + 2s, so every probe comes due inside it\n");
    return 2;
  }
  return compare(cc, jsonl, table);
}
