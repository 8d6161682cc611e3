// SPDX-License-Identifier: Apache-2.0
// The comparison's runs: each measurement is emitted as it is taken; the medians and the goals
// are computed from the emitted values only (jobs_goals.cc).
#include "wheel/load/jobs_compare.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <thread>

#include "jobs_goals.h"
#include "wheel/load/jobs_load.h"
#include "wheel/load/jobs_server.h"

namespace wheel::load {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The servers of the puts suite, in the order of the table.
std::vector<JobsServerSpec> puts_servers(const JobsCompareConfig& c) {
  std::vector<JobsServerSpec> s{
      {kWheelAlways, JobsServerKind::kWheelJobs, c.wheel_jobs, true, "always"},
      {kBeanstalkF0, JobsServerKind::kBeanstalkd, c.beanstalkd, true, "0"},
      {kWheelF50, JobsServerKind::kWheelJobs, c.wheel_jobs, true, "50"},
      {kBeanstalkF50, JobsServerKind::kBeanstalkd, c.beanstalkd, true, "50"},
      {kWheelMemory, JobsServerKind::kWheelJobs, c.wheel_jobs, false, ""},
      {kBeanstalkMemory, JobsServerKind::kBeanstalkd, c.beanstalkd, false, ""},
  };
  if (!c.redis_server.empty()) {
    s.push_back({kRedisAlways, JobsServerKind::kRedis, c.redis_server, true, "always"});
    s.push_back({kRedisEverysec, JobsServerKind::kRedis, c.redis_server, true, "everysec"});
  }
  return s;
}

std::vector<JobsServerSpec> pending_servers(const JobsCompareConfig& c) {
  return {{kWheelF50, JobsServerKind::kWheelJobs, c.wheel_jobs, true, "50"},
          {kBeanstalkF50, JobsServerKind::kBeanstalkd, c.beanstalkd, true, "50"}};
}

// Round r runs the servers rotated by r, so each goes first, last and between in turn.
template <class T>
std::vector<T> rotated(std::vector<T> v, std::uint32_t r) {
  if (!v.empty()) std::rotate(v.begin(), v.begin() + static_cast<long>(r % v.size()), v.end());
  return v;
}

class Runner {
 public:
  explicit Runner(const JobsCompareConfig& c) : c_(c) {}

  json run() {
    fs::create_directories(c_.work_dir);
    for (std::uint32_t r = 0; r < c_.rounds; ++r) {
      if (c_.puts_suite) {
        for (const JobsServerSpec& s : rotated(puts_servers(c_), r)) puts_run(s, r + 1);
      }
      if (c_.pending_suite) {
        for (const JobsServerSpec& s : rotated(pending_servers(c_), r)) pending_run(s, r + 1);
      }
    }
    json summary = summarize_goals(values_, c_.pending, c_.body_size);
    summary["summary"] = true;
    emit(summary);
    return summary;
  }

 private:
  JobsLoadConfig load_for(const JobsServer& server) const {
    JobsLoadConfig l;
    l.protocol = protocol_of(server.spec().kind);
    l.port = server.port();
    l.connections = c_.connections;
    l.window = c_.window;
    l.body_size = c_.body_size;
    l.progress = c_.progress;
    l.stall_timeout = std::chrono::milliseconds(120'000);
    return l;
  }

  static JobsLoadResult checked(JobsLoadResult r, const std::string& what) {
    if (!r.error.empty()) throw std::runtime_error(what + ": " + r.error);
    return r;
  }

  void record(const std::string& metric, const std::string& server, std::uint32_t round,
              double value, json extra = json::object()) {
    values_[metric][server].push_back(value);
    extra["metric"] = metric;
    extra["server"] = server;
    extra["round"] = round;
    extra["value"] = value;
    emit(extra);
  }

  void emit(const json& j) const {
    if (c_.emit) c_.emit(j);
  }
  void say(const std::string& text) const {
    if (c_.progress) c_.progress(text);
  }

  std::string fresh_dir(const JobsServerSpec& s) {
    std::string name = s.name;
    for (char& ch : name) {
      if (ch == ' ' || ch == '/' || ch == '(' || ch == ')') ch = '_';
    }
    const std::string dir =
        (fs::path(c_.work_dir) / (name + "-" + std::to_string(++runs_))).string();
    fs::remove_all(dir);
    return dir;
  }

  void clean(const std::string& dir) {
    std::error_code ec;
    fs::remove_all(dir, ec);
    fs::remove(dir + ".log", ec);
  }

  void puts_run(const JobsServerSpec& s, std::uint32_t round) {
    const std::string dir = fresh_dir(s);
    say("round " + std::to_string(round) + ": puts/s of " + s.name);
    {
      JobsServer server(s, dir, c_.start_timeout);
      JobsLoadConfig l = load_for(server);
      l.phase = JobsPhase::kPut;
      l.duration = c_.put_duration;
      l.delay_min_s = l.delay_max_s = 3600;
      const JobsLoadResult r = checked(run_jobs_load(l), s.name + " puts");
      json extra{{"acknowledged", r.acknowledged},
                 {"errors", r.error_replies},
                 {"elapsed_s", r.elapsed_s}};
      if (r.reply_ms) extra["reply_ms"] = {{"p50", r.reply_ms->p50}, {"p99", r.reply_ms->p99}};
      record("puts_per_s", s.name, round, r.per_second, extra);
      server.stop(std::chrono::seconds(60));
    }
    clean(dir);
  }

  void pending_run(const JobsServerSpec& s, std::uint32_t round) {
    const std::string dir = fresh_dir(s);
    say("round " + std::to_string(round) + ": " + std::to_string(c_.pending) + " pending in " +
        s.name);
    {
      JobsServer server(s, dir, c_.start_timeout);
      const double rss0 = static_cast<double>(server.rss_bytes());
      JobsLoadConfig fill = load_for(server);
      fill.phase = JobsPhase::kPut;
      fill.count = c_.pending;
      fill.delay_min_s = 1;
      fill.delay_max_s = 3600;
      fill.seed = round;
      JobsLoadResult filled = checked(run_jobs_load(fill), s.name + " fill");
      record("fill_puts_per_s", s.name, round, filled.per_second);
      // Let the server settle (an interval sync, a compaction step) before reading its RSS.
      std::this_thread::sleep_for(std::chrono::seconds(1));
      const double rss1 = static_cast<double>(server.rss_bytes());
      record("rss_per_job_bytes", s.name, round, (rss1 - rss0) / static_cast<double>(c_.pending),
             {{"rss_empty", rss0}, {"rss_full", rss1}});
      record("log_bytes_pending", s.name, round, static_cast<double>(server.dir_bytes()));
      if (c_.lateness) lateness_run(server, round);
      const double restart = server.restart_after_kill(c_.start_timeout);
      record("restart_s", s.name, round, restart, {{"held", server.held_at_start()}});
      delete_run(server, filled.ids, round);
      server.stop(std::chrono::seconds(60));
    }
    clean(dir);
  }

  void lateness_run(JobsServer& server, std::uint32_t round) {
    JobsLoadConfig l = load_for(server);
    l.phase = JobsPhase::kLateness;
    l.connections = 4;
    l.duration = c_.lateness_duration;
    l.probe_span = c_.probe_span;
    l.probe_rate = c_.probe_rate;
    l.delay_min_s = 1;
    l.delay_max_s = c_.probe_delay_max_s;
    l.seed = 1000 + round;
    const JobsLoadResult r = checked(run_jobs_load(l), server.spec().name + " lateness");
    if (!r.lateness_ms) throw std::runtime_error(server.spec().name + ": no probe was delivered");
    const json extra{{"probes", r.probes_put},
                     {"missing", r.probes_missing},
                     {"others_reserved", r.others_reserved}};
    record("lateness_p50_ms", server.spec().name, round, r.lateness_ms->p50, extra);
    record("lateness_p99_ms", server.spec().name, round, r.lateness_ms->p99, extra);
    record("lateness_max_ms", server.spec().name, round, r.lateness_ms->max, extra);
  }

  void delete_run(JobsServer& server, const std::vector<std::uint64_t>& ids, std::uint32_t round) {
    JobsLoadConfig d = load_for(server);
    d.phase = JobsPhase::kDelete;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (i % 10 != 0) d.delete_ids.push_back(ids[i]);
    }
    checked(run_jobs_load(d), server.spec().name + " delete");
    // The log settles when its size has not changed for 5 s (compaction done), or after 120 s.
    std::uint64_t last = server.dir_bytes();
    int stable = 0;
    for (int s = 0; s < 120 && stable < 5; ++s) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      const std::uint64_t now = server.dir_bytes();
      stable = now == last ? stable + 1 : 0;
      last = now;
    }
    const std::int64_t held = server.jobs_held(std::chrono::seconds(60));
    record("log_bytes_after_delete", server.spec().name, round, static_cast<double>(last),
           {{"held", held}});
    record("jobs_after_delete", server.spec().name, round, static_cast<double>(held));
  }

  const JobsCompareConfig& c_;
  std::map<std::string, std::map<std::string, std::vector<double>>> values_;
  int runs_ = 0;
};

}  // namespace

nlohmann::json run_jobs_compare(const JobsCompareConfig& config) {
  return Runner(config).run();
}

std::string format_goal_table(const json& summary) {
  std::string out = "| metric | goal | measured (medians) | met |\n|---|---|---|---|\n";
  for (const json& g : summary.value("goals", json::array())) {
    const json& met = g["met"];
    out += "| " + g["metric"].get<std::string>() + " | " + g["goal"].get<std::string>() + " | " +
           g["measured"].get<std::string>() + " | " +
           (met.is_null()     ? "not measured"
            : met.get<bool>() ? "met"
                              : "**not met**") +
           " |\n";
  }
  return out;
}

}  // namespace wheel::load
