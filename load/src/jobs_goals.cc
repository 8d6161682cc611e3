// SPDX-License-Identifier: Apache-2.0
#include "jobs_goals.h"

#include <algorithm>
#include <cstdio>
#include <optional>

#include "wheel/load/percentiles.h"

namespace wheel::load {

namespace {

using nlohmann::json;
using Values = std::map<std::string, std::map<std::string, std::vector<double>>>;

std::optional<double> median_of(const Values& v, const std::string& metric,
                                const std::string& server) {
  const auto m = v.find(metric);
  if (m == v.end()) return std::nullopt;
  const auto s = m->second.find(server);
  if (s == m->second.end() || s->second.empty()) return std::nullopt;
  return median(s->second);
}

std::string fmt(const char* format, double value) {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

// 12,345 style for rates and byte counts.
std::string grouped(double value) {
  std::string digits = std::to_string(static_cast<long long>(value + 0.5));
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) {
    digits.insert(static_cast<std::size_t>(i), ",");
  }
  return digits;
}

json row(const std::string& metric, const std::string& goal, const std::string& measured,
         std::optional<bool> met) {
  json r{{"metric", metric}, {"goal", goal}, {"measured", measured}};
  r["met"] = met ? json(*met) : json(nullptr);
  return r;
}

const char* kNotMeasured = "not measured";

// A goal comparing one metric's median on our server with theirs: measured as "<ours> vs
// <theirs> (<ours/theirs>x)", each side written by `text`, the ratio with two decimals; met as
// `met(ours, theirs)` says; not measured (met null) unless both ran.
json compared(const Values& v, const std::string& metric, const char* ours, const char* theirs,
              std::string (*text)(double), bool (*met)(double, double), const std::string& name,
              const std::string& goal) {
  const auto w = median_of(v, metric, ours);
  const auto b = median_of(v, metric, theirs);
  if (!w || !b) return row(name, goal, kNotMeasured, std::nullopt);
  return row(name, goal, text(*w) + " vs " + text(*b) + " (" + fmt("%.2fx", *w / *b) + ")",
             met(*w, *b));
}

std::string per_second(double value) {
  return grouped(value) + "/s";
}
std::string bytes(double value) {
  return grouped(value) + " B";
}
std::string seconds(double value) {
  return fmt("%.3f s", value);
}

}  // namespace

json summarize_goals(const Values& v, std::uint64_t pending, std::uint32_t body_size) {
  json summary;
  for (const auto& [metric, servers] : v) {
    for (const auto& [server, runs] : servers) {
      summary["medians"][metric][server] = median(runs);
      summary["runs"][metric][server] = runs;
    }
  }
  json goals = json::array();
  const auto put = [&](const char* server) { return median_of(v, "puts_per_s", server); };

  {
    const auto w = put(kWheelAlways), b = put(kBeanstalkF0), r = put(kRedisAlways);
    std::string measured = kNotMeasured;
    std::optional<bool> met;
    if (w && b) {
      measured = grouped(*w) + "/s vs beanstalkd -f0 " + grouped(*b) + "/s (" +
                 fmt("%.1fx", *w / *b) + ")";
      met = *w >= 20 * *b;
      if (r) {
        measured += "; vs Redis always " + grouped(*r) + "/s (" + fmt("%.2fx", *w / *r) + ")";
        met = *met && *w >= 1.5 * *r;
      }
    }
    goals.push_back(row("durable puts/s, each acknowledged after its fsync",
                        ">= 20x beanstalkd -f0; >= 1.5x Redis always", measured, met));
  }
  goals.push_back(compared(
      v, "puts_per_s", kWheelMemory, kBeanstalkMemory, per_second,
      [](double w, double b) { return w >= 1.5 * b; }, "puts/s, memory only",
      ">= 1.5x beanstalkd without -b"));
  {
    const auto p50 = median_of(v, "lateness_p50_ms", kWheelF50);
    const auto p99 = median_of(v, "lateness_p99_ms", kWheelF50);
    const auto max = median_of(v, "lateness_max_ms", kWheelF50);
    const auto b50 = median_of(v, "lateness_p50_ms", kBeanstalkF50);
    const auto b99 = median_of(v, "lateness_p99_ms", kBeanstalkF50);
    const auto bmax = median_of(v, "lateness_max_ms", kBeanstalkF50);
    std::string measured = kNotMeasured;
    std::optional<bool> met;
    if (p50 && p99 && max) {
      measured = "p50 " + fmt("%.2f", *p50) + " / p99 " + fmt("%.2f", *p99) + " / max " +
                 fmt("%.2f", *max) + " ms";
      if (b50 && b99 && bmax) {
        measured += "; beanstalkd p50 " + fmt("%.2f", *b50) + " / p99 " + fmt("%.2f", *b99) +
                    " / max " + fmt("%.2f", *bmax) + " ms";
      }
      met = *p99 <= 5;
    }
    goals.push_back(row("delivery lateness (ready -> reserved vs due), " +
                            grouped(static_cast<double>(pending)) + " pending, delays 1 s - 1 h",
                        "p99 <= 5 ms (report beanstalkd's)", measured, met));
  }
  goals.push_back(compared(
      v, "rss_per_job_bytes", kWheelF50, kBeanstalkF50, bytes,
      [](double w, double b) { return w <= 0.5 * b; },
      "RSS per pending job, " + std::to_string(body_size) + "-byte bodies, " +
          grouped(static_cast<double>(pending)) + " pending",
      "<= 0.5x beanstalkd"));
  goals.push_back(compared(
      v, "restart_s", kWheelF50, kBeanstalkF50, seconds,
      [](double w, double b) { return w <= 1.0 && w <= 0.5 * b; },
      "restart to serving (kill -9) with " + grouped(static_cast<double>(pending)) + " pending",
      "<= 1 s and <= 0.5x beanstalkd"));
  {
    const auto w = median_of(v, "log_bytes_after_delete", kWheelF50);
    const auto live = median_of(v, "jobs_after_delete", kWheelF50);
    const auto b = median_of(v, "log_bytes_after_delete", kBeanstalkF50);
    std::string measured = kNotMeasured;
    std::optional<bool> met;
    if (w && live) {
      const double live_bytes = *live * (kWheelPutRecordFixedBytes + body_size);
      const double bound = 2 * live_bytes + 2 * kWheelSegmentBytes;
      measured =
          grouped(*w) + " B (bound " + grouped(bound) + " B for " + grouped(*live) + " live jobs)";
      if (b) measured += "; beanstalkd " + grouped(*b) + " B";
      met = *w <= bound;
    }
    goals.push_back(
        row("log bytes after " + grouped(static_cast<double>(pending)) + " puts with 90 % deleted",
            "<= 2x live + 2 segments (report beanstalkd's)", measured, met));
  }
  summary["goals"] = goals;
  return summary;
}

}  // namespace wheel::load
