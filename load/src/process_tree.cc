// SPDX-License-Identifier: Apache-2.0
#include "wheel/load/process_tree.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

namespace wheel::load {

namespace {

// The sum over `pids` of the first line of /proc/PID/<file> that `format` (one %llu) matches.
std::uint64_t sum_kib(const std::vector<pid_t>& pids, const char* file, const char* format) {
  std::uint64_t total = 0;
  for (pid_t p : pids) {
    std::ifstream in("/proc/" + std::to_string(p) + "/" + file);
    for (std::string line; std::getline(in, line);) {
      unsigned long long kib = 0;
      if (std::sscanf(line.c_str(), format, &kib) == 1) {
        total += kib;
        break;
      }
    }
  }
  return total;
}

}  // namespace

std::vector<pid_t> process_and_children(pid_t pid) {
  std::vector<pid_t> out;
  if (!std::filesystem::exists("/proc/" + std::to_string(pid))) return out;
  out.push_back(pid);
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "stat");
    std::string stat;
    if (!std::getline(in, stat)) continue;
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so parse after the last
    // ')'.
    const auto paren = stat.rfind(')');
    char state = 0;
    int ppid = 0;
    if (paren != std::string::npos &&
        std::sscanf(stat.c_str() + paren + 1, " %c %d", &state, &ppid) == 2 && ppid == pid &&
        state != 'Z') {
      out.push_back(static_cast<pid_t>(std::stol(name)));
    }
  }
  std::sort(out.begin() + 1, out.end());
  return out;
}

std::uint64_t rss_kib(const std::vector<pid_t>& pids) {
  return sum_kib(pids, "status", "VmRSS: %llu");
}

std::uint64_t pss_kib(const std::vector<pid_t>& pids) {
  return sum_kib(pids, "smaps_rollup", "Pss: %llu");
}

double cpu_seconds(const std::vector<pid_t>& pids) {
  unsigned long long ticks = 0;
  for (pid_t p : pids) {
    std::ifstream in("/proc/" + std::to_string(p) + "/stat");
    std::string stat;
    if (!std::getline(in, stat)) continue;
    const auto paren = stat.rfind(')');
    unsigned long long utime = 0, stime = 0;
    // After "(comm)": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime
    // stime (fields 3..15 of proc(5)).
    if (paren != std::string::npos &&
        std::sscanf(stat.c_str() + paren + 1,
                    " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
                    &stime) == 2) {
      ticks += utime + stime;
    }
  }
  return static_cast<double>(ticks) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

KernelMemory read_kernel_memory() {
  KernelMemory k;
  std::ifstream meminfo("/proc/meminfo");
  for (std::string line; std::getline(meminfo, line);) {
    unsigned long long kib = 0;
    if (std::sscanf(line.c_str(), "Slab: %llu", &kib) == 1) k.slab_kib = kib;
  }
  std::ifstream sockstat("/proc/net/sockstat");
  for (std::string line; std::getline(sockstat, line);) {
    unsigned long long inuse = 0, mem = 0;
    // "TCP: inuse 5 orphan 0 tw 0 alloc 7 mem 1"
    if (std::sscanf(line.c_str(), "TCP: inuse %llu orphan %*u tw %*u alloc %*u mem %llu", &inuse,
                    &mem) == 2) {
      k.tcp_inuse = inuse;
      k.tcp_kib = mem * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE)) / 1024;
    }
  }
  return k;
}

std::vector<std::string> fd_targets(const std::vector<pid_t>& pids) {
  std::vector<std::string> out;
  for (pid_t p : pids) {
    std::error_code ec;
    const std::string dir = "/proc/" + std::to_string(p) + "/fd";
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      char target[4096];
      const ssize_t n = readlink(entry.path().c_str(), target, sizeof target - 1);
      if (n < 0) continue;  // closed meanwhile
      out.push_back(std::to_string(p) + " " + std::string(target, static_cast<std::size_t>(n)));
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> fd_changes(const std::vector<std::string>& before,
                                    const std::vector<std::string>& after, pid_t supervisor) {
  std::vector<std::string> gone, added, out;
  std::set_difference(before.begin(), before.end(), after.begin(), after.end(),
                      std::back_inserter(gone));
  std::set_difference(after.begin(), after.end(), before.begin(), before.end(),
                      std::back_inserter(added));
  for (const auto& line : gone) out.push_back("- " + line);
  std::set<std::string> reserve_seen;  // pids whose one /dev/null was excused
  const std::string sup = std::to_string(supervisor);
  for (const auto& line : added) {
    const auto space = line.find(' ');
    const std::string pid = line.substr(0, space), target = line.substr(space + 1);
    if (pid != sup && target == "/dev/null" && reserve_seen.insert(pid).second) continue;
    out.push_back("+ " + line);
  }
  return out;
}

}  // namespace wheel::load
