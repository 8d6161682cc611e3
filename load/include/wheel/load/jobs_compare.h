// SPDX-License-Identifier: Apache-2.0
// The side-by-side comparison of job servers behind scripts/compare-jobs.sh (issue 19 §4): the
// same load (jobs_load.h) against wheel-jobs, beanstalkd and a Redis delay queue, started here
// (jobs_server.h), in rounds whose server order alternates, so a slow spell of a shared
// machine falls on every server alike. Two suites:
//   puts     each server config fresh: puts with 1 h delays for `put_duration`; puts/s.
//   pending  wheel-jobs and beanstalkd, durable with the same 50 ms sync interval: `pending`
//            puts with delays from 1 s to 1 h; RSS per pending job; delivery lateness of
//            probes coming due while they are pending; restart to serving after kill -9; log
//            bytes after deleting 90 % of them once the log settles.
// Every measurement is one JSON object (a JSON line); the summary has the medians and the goal
// table of the issue, met or not.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace wheel::load {

struct JobsCompareConfig {
  std::string wheel_jobs;  // program paths
  std::string beanstalkd;
  std::string redis_server;  // empty: Redis is left out
  std::string work_dir;      // data directories go here (each removed after its run)
  std::uint32_t rounds = 3;  // 1 .. 100
  std::uint32_t connections = 8;
  std::uint32_t window = 64;
  std::uint32_t body_size = 100;
  bool puts_suite = true;
  bool pending_suite = true;
  bool lateness = true;  // in the pending suite
  std::chrono::milliseconds put_duration{5'000};
  std::uint64_t pending = 1'000'000;
  std::chrono::milliseconds lateness_duration{35'000};
  std::chrono::milliseconds probe_span{10'000};
  double probe_rate = 300;
  std::uint32_t probe_delay_max_s = 20;
  // Servers must answer within this after a spawn (a restart replays the whole log).
  std::chrono::seconds start_timeout{600};
  // Each measurement, as it is taken (e.g. appended to the JSON lines file).
  std::function<void(const nlohmann::json&)> emit;
  // One-line progress texts (e.g. logged).
  std::function<void(const std::string&)> progress;
};

// Runs the suites; returns the summary object (also emitted last): "medians" by metric and
// server, and "goals": one row per goal with the figures, the ratio and "met" (true/false).
// Throws std::runtime_error when a server cannot start or a load fails.
nlohmann::json run_jobs_compare(const JobsCompareConfig& config);

// The summary as a Markdown table: metric, goal, measured, met. Safe from any thread.
std::string format_goal_table(const nlohmann::json& summary);

}  // namespace wheel::load
