// SPDX-License-Identifier: Apache-2.0
#include "wheel/server/process_metrics.h"

#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string_view>
#include <vector>

#include "wheel/server/prometheus_text.h"
#include "wheel/version.h"

namespace wheel::server {
namespace {

std::string proc_path(pid_t pid, const char* what) {
  return "/proc/" + (pid == 0 ? std::string("self") : std::to_string(pid)) + "/" + what;
}

std::optional<std::string> slurp(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (in.bad()) return std::nullopt;
  return text;
}

// The boot time in seconds since the epoch ("btime" of /proc/stat): process start times in
// /proc/PID/stat count clock ticks from boot. Read once; 0 when unreadable.
double boot_time_seconds() {
  static const double btime = [] {
    const auto text = slurp("/proc/stat");
    if (!text) return 0.0;
    const std::size_t at = text->find("\nbtime ");
    if (at == std::string::npos) return 0.0;
    return std::strtod(text->c_str() + at + 7, nullptr);
  }();
  return btime;
}

// Entries of /proc/PID/fd; empty when unreadable.
std::optional<std::uint64_t> count_fds(pid_t pid) {
  DIR* dir = ::opendir(proc_path(pid, "fd").c_str());
  if (dir == nullptr) return std::nullopt;
  std::uint64_t n = 0;
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_name[0] != '.') ++n;
  }
  ::closedir(dir);
  if (pid == 0 && n > 0) --n;  // the descriptor opendir itself held while reading
  return n;
}

// The soft "Max open files" of /proc/PID/limits; "unlimited" reads as UINT64_MAX.
std::optional<std::uint64_t> max_fds(pid_t pid) {
  const auto text = slurp(proc_path(pid, "limits"));
  if (!text) return std::nullopt;
  constexpr std::string_view kKey = "Max open files";
  const std::size_t at = text->find(kKey);
  if (at == std::string::npos) return std::nullopt;
  std::istringstream line(text->substr(at + kKey.size(), text->find('\n', at) - at - kKey.size()));
  std::string soft;
  line >> soft;
  if (soft == "unlimited") return UINT64_MAX;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(soft.c_str(), &end, 10);
  if (soft.empty() || *end != '\0') return std::nullopt;
  return v;
}

}  // namespace

std::optional<ProcessSample> read_process_sample(pid_t pid) {
  const auto stat = slurp(proc_path(pid, "stat"));
  if (!stat) return std::nullopt;
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after the last ')'.
  const std::size_t close = stat->rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream in(stat->substr(close + 1));
  std::vector<std::string> f{std::istream_iterator<std::string>(in),
                             std::istream_iterator<std::string>()};
  // f[0] is field 3 (state) of proc(5): field N is f[N - 3].
  if (f.size() < 22) return std::nullopt;
  const auto num = [&f](int field) { return std::strtoull(f[field - 3].c_str(), nullptr, 10); };
  const double tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  ProcessSample s;
  s.cpu_seconds = static_cast<double>(num(14) + num(15)) / tick;
  s.reaped_children_cpu_seconds = static_cast<double>(num(16) + num(17)) / tick;
  s.start_time_seconds = boot_time_seconds() + static_cast<double>(num(22)) / tick;
  s.virtual_bytes = num(23);
  s.resident_bytes = num(24) * page;
  // A zombie (dead, not yet reaped) has a stat but no descriptors to list: 0, not "gone", so
  // that its CPU seconds still count until the reaping moves them to its parent's cutime.
  s.open_fds = count_fds(pid).value_or(0);
  s.max_fds = max_fds(pid).value_or(0);
  return s;
}

ProcessSample sample_process_tree(std::span<const pid_t> workers) {
  ProcessSample total = read_process_sample(0).value_or(ProcessSample{});
  total.cpu_seconds += total.reaped_children_cpu_seconds;
  for (const pid_t pid : workers) {
    if (pid <= 0) continue;
    const auto w = read_process_sample(pid);
    if (!w) continue;
    total.cpu_seconds += w->cpu_seconds;  // not its children's: a worker forks none
    total.resident_bytes += w->resident_bytes;
    total.virtual_bytes += w->virtual_bytes;
    total.open_fds += w->open_fds;
  }
  return total;
}

std::string render_process_metrics(const ProcessSample& s) {
  PrometheusText t;
  t.counter_double("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.",
                   s.cpu_seconds);
  t.gauge("process_resident_memory_bytes", "Resident memory size in bytes.", s.resident_bytes);
  t.gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.", s.virtual_bytes);
  t.gauge("process_open_fds", "Number of open file descriptors.", s.open_fds);
  t.gauge("process_max_fds", "Maximum number of open file descriptors.", s.max_fds);
  t.gauge_double("process_start_time_seconds",
                 "Start time of the process since unix epoch in seconds.", s.start_time_seconds);
  return t.take();
}

std::string render_build_info() {
  PrometheusText t;
  t.series("wheel_build_info", "gauge",
           "Always 1; the version label says which version of the program runs.", "version",
           {{wheel::kVersion, 1}});
  return t.take();
}

}  // namespace wheel::server
