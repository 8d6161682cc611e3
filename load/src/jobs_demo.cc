// SPDX-License-Identifier: Apache-2.0
// The demo's steps are jobs_load.h's phases against one JobsServer: put (killed at an exact
// acknowledged count from the load's own loop), restart, put the rest, drain into a JobsLedger.
#include "wheel/load/jobs_demo.h"

#include <fmt/format.h>
#include <signal.h>
#include <stdlib.h>

#include <filesystem>
#include <stdexcept>

#include "wheel/load/jobs_ledger.h"
#include "wheel/load/jobs_load.h"
#include "wheel/load/jobs_server.h"

namespace wheel::load {

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::uint32_t kWindow = 64;  // puts in flight per connection
constexpr std::size_t kIdsShown = 10;

std::int64_t unix_now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string make_scratch_dir() {
  std::string pattern =
      (std::filesystem::temp_directory_path() / "wheel-jobs-demo-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) {
    throw std::runtime_error("cannot create a scratch directory under " +
                             std::filesystem::temp_directory_path().string());
  }
  return pattern;
}

JobsLoadConfig load_config(const JobsDemoConfig& c, std::uint16_t port) {
  JobsLoadConfig l;
  l.port = port;
  l.connections = c.connections;
  l.window = kWindow;
  l.delay_min_s = c.delay_min_s;
  l.delay_max_s = c.delay_max_s;
  l.stall_timeout = std::chrono::seconds(60);
  l.progress = c.progress;
  return l;
}

std::uint32_t kill_point(const JobsDemoConfig& c) {
  return c.kill_after != 0 ? c.kill_after : c.jobs / 2;
}

std::string ids_text(const std::vector<std::uint64_t>& ids) {
  std::string text;
  for (const std::uint64_t id : ids) text += (text.empty() ? "" : ", ") + std::to_string(id);
  return text;
}

// The steps, each a phase of jobs_load.h; throws std::runtime_error naming the step that failed.
void run_steps(const JobsDemoConfig& c, const std::string& dir, JobsLedger& ledger,
               JobsDemoResult& r) {
  auto say = [&](const std::string& line) {
    if (c.progress) c.progress(line);
  };
  JobsServer server({"wheel-jobs --dir", JobsServerKind::kWheelJobs, c.wheel_jobs, true, "always"},
                    dir + "/data", c.start_timeout);
  say(fmt::format(
      "wheel-jobs --dir serving on port {}; putting {} jobs, kill -9 at {} acknowledged",
      server.port(), c.jobs, kill_point(c)));

  JobsLoadConfig put = load_config(c, server.port());
  put.count = c.jobs;
  put.seed = 1;
  put.on_acknowledged = [&](std::uint64_t acknowledged) {
    if (acknowledged == kill_point(c)) kill(server.pid(), SIGKILL);
  };
  const JobsLoadResult first = run_jobs_load(put);
  r.acknowledged_before_kill = first.acknowledged;
  r.in_flight_at_kill = first.sent - first.acknowledged - first.error_replies;
  if (first.acknowledged < kill_point(c)) {
    throw std::runtime_error(fmt::format("the puts stopped at {} acknowledged, before the kill: {}",
                                         first.acknowledged, first.error));
  }
  if (first.error_replies != 0) {
    throw std::runtime_error("a put was refused: " + first.first_error_reply);
  }
  ledger.acknowledge(first.ids);
  std::vector<std::uint64_t> acknowledged = first.ids;

  r.restart_s = server.restart_after_kill(c.start_timeout);
  r.held_after_restart = server.held_at_start();
  say(fmt::format(
      "killed with {} acknowledged, {} in flight; restarted in {:.3f} s holding {} jobs",
      r.acknowledged_before_kill, r.in_flight_at_kill, r.restart_s, r.held_after_restart));

  if (first.acknowledged < c.jobs) {
    JobsLoadConfig rest = load_config(c, server.port());
    rest.count = c.jobs - first.acknowledged;
    rest.seed = 2;
    const JobsLoadResult second = run_jobs_load(rest);
    if (!second.error.empty() || second.error_replies != 0) {
      throw std::runtime_error("the puts after the restart failed: " +
                               (second.error.empty() ? second.first_error_reply : second.error));
    }
    ledger.acknowledge(second.ids);
    acknowledged.insert(acknowledged.end(), second.ids.begin(), second.ids.end());
  }
  r.acknowledged = ledger.acknowledged();

  if (c.before_drain) c.before_drain(server.port(), acknowledged);
  say(fmt::format("{} jobs acknowledged; reserving each as it falls due", r.acknowledged));
  JobsLoadConfig drain = load_config(c, server.port());
  drain.phase = JobsPhase::kDrain;
  drain.duration = std::chrono::seconds(c.delay_max_s) + c.lost_after;
  drain.on_reserved = [&](std::uint64_t id, std::string_view body) {
    return ledger.reserve(id, body, unix_now_us());
  };
  const JobsLoadResult d = run_jobs_load(drain);
  if (!d.error.empty()) throw std::runtime_error("the reserves failed: " + d.error);
  server.stop(std::chrono::seconds(30));
}

}  // namespace

std::string check_jobs_demo(const JobsDemoConfig& c) {
  auto range = [](const char* name, std::uint64_t value, std::uint64_t lo, std::uint64_t hi) {
    if (value >= lo && value <= hi) return std::string();
    return fmt::format("{} must be from {} to {}, got {}", name, lo, hi, value);
  };
  for (const std::string& e :
       {range("jobs", c.jobs, 2, 1'000'000), range("connections", c.connections, 1, 1'000),
        range("delay min (s)", c.delay_min_s, 1, 3600),
        range("delay max (s)", c.delay_max_s, c.delay_min_s, 3600),
        c.kill_after == 0 ? std::string() : range("kill after", c.kill_after, 1, c.jobs - 1),
        range("lost after (s)", static_cast<std::uint64_t>(c.lost_after.count()), 1, 3600)}) {
    if (!e.empty()) return e;
  }
  if (c.wheel_jobs.empty()) return "the wheel-jobs program is not named";
  return {};
}

JobsDemoResult run_jobs_demo(const JobsDemoConfig& c) {
  const auto start = Clock::now();
  JobsDemoResult r;
  JobsLedger ledger;
  std::string dir = c.work_dir;
  try {
    if (dir.empty()) dir = make_scratch_dir();
    run_steps(c, dir, ledger, r);
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  r.acknowledged = ledger.acknowledged();
  r.reserved = ledger.reserved();
  r.lost = ledger.lost();
  r.early = ledger.early();
  r.duplicates = ledger.duplicates();
  r.unacknowledged_kept = ledger.unacknowledged();
  r.lost_ids = ledger.lost_ids(kIdsShown);
  r.early_ids = ledger.early_ids();
  r.lateness_ms = ledger.lateness_ms();
  r.elapsed_s = std::chrono::duration<double>(Clock::now() - start).count();
  if (c.work_dir.empty() && !dir.empty() && r.passed()) {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  } else {
    r.work_dir = dir;
  }
  return r;
}

std::string format_jobs_demo(const JobsDemoConfig& c, const JobsDemoResult& r) {
  std::string text = fmt::format(
      "wheel-jobs demo: --dir, --fsync always; {} delayed jobs (delays {}-{} s) over {} "
      "connections, kill -9 at {} acknowledged, {:.1f} s\n",
      c.jobs, c.delay_min_s, c.delay_max_s, c.connections, kill_point(c), r.elapsed_s);
  text += fmt::format(
      "  puts: {} acknowledged before the kill ({} in flight), restarted in {:.3f} s holding {} "
      "jobs; {} acknowledged in all\n",
      r.acknowledged_before_kill, r.in_flight_at_kill, r.restart_s, r.held_after_restart,
      r.acknowledged);
  text += fmt::format(
      "  reserved: {} of {} acknowledged, {} lost, {} early, {} twice; {} put in flight at the "
      "kill came back too\n",
      r.reserved, r.acknowledged, r.lost, r.early, r.duplicates, r.unacknowledged_kept);
  if (r.lateness_ms) {
    const PercentileSummary& l = *r.lateness_ms;
    text += fmt::format(
        "  lateness (reserved minus due): p50 {:.2f} p90 {:.2f} p99 {:.2f} max {:.2f} ms "
        "(n={})\n",
        l.p50, l.p90, l.p99, l.max, l.count);
  } else {
    text += "  lateness: no samples\n";
  }
  if (!r.lost_ids.empty()) text += "  lost ids: " + ids_text(r.lost_ids) + "\n";
  if (!r.early_ids.empty()) text += "  early ids: " + ids_text(r.early_ids) + "\n";
  if (!r.error.empty()) text += "  error: " + r.error + "\n";
  if (r.passed()) {
    text += "  result: OK\n";
  } else {
    text += fmt::format("  result: FAILED ({} lost, {} early{}){}\n", r.lost, r.early,
                        r.error.empty() ? "" : ", an error",
                        r.work_dir.empty() ? "" : "; data and log kept in " + r.work_dir);
  }
  return text;
}

}  // namespace wheel::load
