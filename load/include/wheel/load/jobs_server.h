// SPDX-License-Identifier: Apache-2.0
// A job server under measurement, as a child process: wheel-jobs, Debian's beanstalkd or
// redis-server, started on a free loopback port with its data directory, and the figures
// measured from outside (time to serving, RSS, bytes on disk). Used by the comparison
// (jobs_compare.h) and by its tests.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "wheel/load/jobs_wire.h"

namespace wheel::load {

enum class JobsServerKind : std::uint8_t { kWheelJobs, kBeanstalkd, kRedis };

struct JobsServerSpec {
  std::string name;  // as reported: "beanstalkd -b -f0"
  JobsServerKind kind = JobsServerKind::kWheelJobs;
  std::string program;   // path of the binary
  bool durable = false;  // with a data directory
  // The sync policy when durable: wheel-jobs --fsync (always, MS, never); beanstalkd -f MS
  // ("0" = every write); redis appendfsync (always, everysec).
  std::string sync;
};

JobsProtocol protocol_of(JobsServerKind kind);

// One running server. Not copyable; destroying it SIGKILLs the child (if still running) and
// reaps it. Not thread-safe: one thread uses it.
class JobsServer {
 public:
  // Spawns the server on a free 127.0.0.1 port with data directory `dir` (created when durable;
  // its output goes to "<dir>.log") and waits until it answers a count request.
  // Throws std::runtime_error naming the server when it exits or does not answer in `timeout`
  // (with the last lines of its log).
  JobsServer(JobsServerSpec spec, std::string dir, std::chrono::seconds timeout);
  ~JobsServer();
  JobsServer(const JobsServer&) = delete;
  JobsServer& operator=(const JobsServer&) = delete;

  const JobsServerSpec& spec() const { return spec_; }
  std::uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }
  // Seconds from the spawn to the first answer of the last start (restart() included).
  double serving_after_s() const { return serving_after_s_; }
  // The jobs held when it first answered, at the last start.
  std::int64_t held_at_start() const { return held_at_start_; }

  // The jobs it holds now (one count request on a fresh connection); -1 when it does not answer
  // in `timeout`.
  std::int64_t jobs_held(std::chrono::seconds timeout) const;
  // Its resident set (VmRSS of /proc/PID/status) in bytes; 0 when unreadable.
  std::uint64_t rss_bytes() const;
  // Bytes of the regular files under the data directory (0 when not durable).
  std::uint64_t dir_bytes() const;

  // SIGKILLs it and starts it again on the same directory and port; returns serving_after_s().
  // Throws as the constructor.
  double restart_after_kill(std::chrono::seconds timeout);
  // SIGTERM, then waits up to `timeout` (then SIGKILL). Returns its exit status, or -1.
  int stop(std::chrono::seconds timeout);

 private:
  void spawn_and_wait(std::chrono::seconds timeout);
  std::string log_tail() const;

  JobsServerSpec spec_;
  std::string dir_;
  std::uint16_t port_ = 0;
  pid_t pid_ = -1;
  double serving_after_s_ = 0;
  std::int64_t held_at_start_ = -1;
};

// Asks the server at 127.0.0.1:`port` for the jobs it holds, over a blocking socket with
// every wait bounded by `timeout`; -1 when it does not answer. Safe from any thread.
std::int64_t query_jobs_held(JobsProtocol protocol, std::uint16_t port,
                             std::chrono::milliseconds timeout);

}  // namespace wheel::load
