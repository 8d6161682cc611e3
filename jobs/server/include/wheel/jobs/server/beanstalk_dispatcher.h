// SPDX-License-Identifier: Apache-2.0
// BeanstalkDispatcher: beanstalkd's protocol on a JobQueue. It takes one parsed request of a
// session (beanstalk_request.h), runs it on the queue and appends the reply bytes
// (beanstalk_reply.h) to the caller's output; it counts the commands for `stats`. The session's
// own requests (use, watch, ignore, list-tube-used, list-tubes-watched) are the front end's
// (SessionTubes): it tells the queue what changes (QueueBackend::change_tubes) and counts them
// here (command_counts()); handed one anyway, the dispatcher answers INTERNAL_ERROR. A server
// feeds it each connection's requests in order and stops feeding a session while its reserve
// waits (kWaiting), until the queue's ReserveListener reports the end; append_reserve_end()
// writes that reply.
//
// Threads: as the queue (one thread).
#pragma once

#include <cstdint>
#include <string>

#include "wheel/jobs/beanstalk/beanstalk_request.h"
#include "wheel/jobs/beanstalk/beanstalk_stats.h"
#include "wheel/jobs/model/job_queue.h"
#include "wheel/jobs/server/internal_errors.h"
#include "wheel/reason_log.h"

namespace wheel::jobs {

// What `stats` says about the process (beanstalkd's version, id, uname, ...).
struct ServerInfo {
  std::string version;
  std::string id;  // random per process, hex
  std::string hostname, os, platform;
  std::int64_t pid = 0;
  std::uint32_t max_job_size = 65'535;
};

// Sets the fields of `stats` that describe this process: pid, version, id, hostname, os and
// platform from `info` (views into it: `info` must outlive `stats`), and rusage-utime and
// rusage-stime from getrusage(RUSAGE_SELF). Safe from any thread.
void fill_process_stats(const ServerInfo& info, beanstalk::ServerStats& stats);

// Sets the job counts of `stats` (by state, timed out, put in total, tubes) from `counts`: a
// QueueCounters or a StoreTotals, the same numbers kept in memory or in Redis.
inline void fill_job_counts(const StateCounts& counts, beanstalk::ServerStats& stats) {
  static_cast<StateCounts&>(stats) = counts;
}

class BeanstalkDispatcher {
 public:
  enum class Next : std::uint8_t {
    kContinue,  // replied; feed the next request
    kWaiting,   // a reserve waits: no reply yet, feed nothing until the listener reports
    kClose,     // quit: close the connection (no reply)
  };

  // `queue` must outlive the dispatcher; uptime counts from the queue's now().
  BeanstalkDispatcher(JobQueue& queue, ServerInfo info);

  // Runs `request` for `session` and appends its reply to `out`.
  Next handle(SessionId session, beanstalk::Request&& request, std::string& out);

  // The reply of a blocked reserve of `session` that ended (RESERVED, TIMED_OUT or
  // DEADLINE_SOON). A reserved job whose body cannot be read (JobQueue::body) is given back
  // (JobQueue::unreserve) and the reply is INTERNAL_ERROR.
  void append_reserve_end(SessionId session, const ReserveResult& result, std::string& out);

  // The stats reply's document (also for metrics).
  beanstalk::ServerStats server_stats() const;
  const beanstalk::CommandCounts& commands() const { return commands_; }
  // The same counts, for the front end to count the requests it answers itself.
  beanstalk::CommandCounts& command_counts() { return commands_; }
  // Requests answered INTERNAL_ERROR, by cause (kLogFailed, kBodyUnreadable); each is also
  // logged with its reason (the first at once, then at most one line per cause every 10 s).
  std::uint64_t internal_errors(InternalErrorCause cause) const {
    return internal_errors_.count(static_cast<std::size_t>(cause));
  }

 private:
  // FOUND with the job, NOT_FOUND for none, INTERNAL_ERROR when its body cannot be read.
  void append_found(std::string& out, const Job* job);

  JobQueue& queue_;
  ServerInfo info_;
  Millis started_;
  beanstalk::CommandCounts commands_;
  std::string body_;  // bodies read back from the journal (reused)
  ReasonLog internal_errors_{std::string(kInternalErrorLogPrefix), kInternalErrorCauseNames};
  bool noted_ = false;  // this request's INTERNAL_ERROR was counted where it was made
  void note_unreadable(std::uint64_t id);
};

}  // namespace wheel::jobs
