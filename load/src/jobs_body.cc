// SPDX-License-Identifier: Apache-2.0
// The job body of a jobs load and the checks of its configuration (jobs_load.h).
#include <charconv>
#include <cstdio>

#include "wheel/load/jobs_load.h"

namespace wheel::load {

std::string check_jobs_load(const JobsLoadConfig& c) {
  auto range = [](const char* name, std::uint64_t value, std::uint64_t lo, std::uint64_t hi) {
    if (value >= lo && value <= hi) return std::string();
    return std::string(name) + " must be from " + std::to_string(lo) + " to " + std::to_string(hi) +
           ", got " + std::to_string(value);
  };
  for (const std::string& e :
       {range("connections", c.connections, 1, 10'000), range("window", c.window, 1, 100'000),
        range("body size", c.body_size, 1, 1u << 20),
        range("delay max (s)", c.delay_max_s, c.delay_min_s, kMaxJobsDelayS),
        range("ttr (s)", c.ttr_s, 1, kMaxJobsDelayS)}) {
    if (!e.empty()) return e;
  }
  if (c.phase == JobsPhase::kPut && c.count == 0 && c.duration.count() <= 0) {
    return "a put run needs a count or a duration";
  }
  if (c.phase == JobsPhase::kLateness) {
    if (c.protocol != JobsProtocol::kBeanstalk)
      return "the lateness run needs beanstalkd's protocol";
    if (c.body_size < 64) return "the lateness run needs bodies of at least 64 bytes";
    if (!(c.probe_rate >= 1 && c.probe_rate <= 100'000))
      return "probe rate must be from 1 to 100000";
    if (c.duration.count() <= 0) return "the lateness run needs a duration";
  }
  if (c.phase == JobsPhase::kDrain) {
    if (c.protocol != JobsProtocol::kBeanstalk) return "the drain run needs beanstalkd's protocol";
    if (!c.on_reserved) return "the drain run needs on_reserved";
    if (c.duration.count() <= 0) return "the drain run needs a duration";
  }
  if (c.stall_timeout.count() < 1000) return "stall timeout must be at least 1 s";
  return {};
}

std::string make_job_body(std::uint32_t size, std::int64_t unix_us, std::uint64_t delay_ms,
                          bool probe) {
  char header[80];
  const int n =
      std::snprintf(header, sizeof header, "wjl %lld %llu %d ", static_cast<long long>(unix_us),
                    static_cast<unsigned long long>(delay_ms), probe ? 1 : 0);
  std::string body(size, 'x');
  if (n > 0 && static_cast<std::uint32_t>(n) <= size)
    body.replace(0, static_cast<std::size_t>(n), header);
  return body;
}

bool parse_job_body(std::string_view body, std::int64_t& unix_us, std::uint64_t& delay_ms,
                    bool& probe) {
  if (!body.starts_with("wjl ")) return false;
  const char* p = body.data() + 4;
  const char* end = body.data() + body.size();
  auto r1 = std::from_chars(p, end, unix_us);
  if (r1.ec != std::errc() || r1.ptr == end || *r1.ptr != ' ') return false;
  auto r2 = std::from_chars(r1.ptr + 1, end, delay_ms);
  if (r2.ec != std::errc() || r2.ptr == end || *r2.ptr != ' ') return false;
  if (r2.ptr + 2 >= end || (r2.ptr[1] != '0' && r2.ptr[1] != '1') || r2.ptr[2] != ' ') return false;
  probe = r2.ptr[1] == '1';
  return true;
}

}  // namespace wheel::load
