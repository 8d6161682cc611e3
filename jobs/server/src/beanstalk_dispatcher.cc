// SPDX-License-Identifier: Apache-2.0
#include "wheel/jobs/server/beanstalk_dispatcher.h"

#include <sys/resource.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "wheel/enum_table.h"
#include "wheel/jobs/beanstalk/beanstalk_reply.h"
#include "wheel/overloaded.h"

namespace wheel::jobs {

namespace bs = beanstalk;
using bs::Reply;

namespace {

// The reply to each outcome that is not a success; any other (kInternalError, kWaiting, which
// never reaches a reply) reads INTERNAL_ERROR.
constexpr EnumPair<Outcome, Reply> kErrorReplies[] = {
    {Outcome::kNotFound, Reply::kNotFound},         {Outcome::kOutOfMemory, Reply::kOutOfMemory},
    {Outcome::kDraining, Reply::kDraining},         {Outcome::kTimedOut, Reply::kTimedOut},
    {Outcome::kDeadlineSoon, Reply::kDeadlineSoon},
};

// The reply to a command's outcome: `success` when it went through.
Reply reply_to(Outcome outcome, Reply success) {
  if (outcome == Outcome::kOk) return success;
  return map_enum(kErrorReplies, outcome, Reply::kInternalError);
}

void append_outcome(std::string& out, Outcome outcome, Reply success) {
  bs::append_reply(out, reply_to(outcome, success));
}

// Writes the reply of a command that went through with `on_ok()`; otherwise its error.
template <class OnOk>
void append_on_ok(std::string& out, Outcome outcome, OnOk on_ok) {
  if (outcome == Outcome::kOk) {
    on_ok();
  } else {
    append_outcome(out, outcome, Reply::kInternalError);
  }
}

// stats-job and stats-tube: "OK <bytes>" and the YAML of `stats`, or NOT_FOUND.
template <class Stats>
void append_stats(std::string& out, const std::optional<Stats>& stats,
                  std::string (*yaml)(const Stats&)) {
  if (stats) {
    bs::append_ok(out, yaml(*stats));
  } else {
    bs::append_reply(out, Reply::kNotFound);
  }
}

std::chrono::microseconds to_micros(const timeval& tv) {
  return std::chrono::seconds(tv.tv_sec) + std::chrono::microseconds(tv.tv_usec);
}

}  // namespace

void fill_process_stats(const ServerInfo& info, bs::ServerStats& s) {
  s.pid = info.pid;
  s.version = info.version;
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) == 0) {
    s.rusage_user = to_micros(usage.ru_utime);
    s.rusage_system = to_micros(usage.ru_stime);
  }
  s.id = info.id;
  s.hostname = info.hostname;
  s.os = info.os;
  s.platform = info.platform;
}

BeanstalkDispatcher::BeanstalkDispatcher(JobQueue& queue, ServerInfo info)
    : queue_(queue), info_(std::move(info)), started_(queue.now()) {}

void BeanstalkDispatcher::append_found(std::string& out, const Job* job) {
  if (job == nullptr) {
    bs::append_reply(out, Reply::kNotFound);
  } else if (auto body = queue_.body(*job, body_)) {
    bs::append_job(out, bs::JobReply::kFound, job->id, *body);
  } else {
    note_unreadable(job->id);
    bs::append_reply(out, Reply::kInternalError);
  }
}

void BeanstalkDispatcher::note_unreadable(std::uint64_t id) {
  noted_ = true;
  internal_errors_.note(static_cast<std::size_t>(InternalErrorCause::kBodyUnreadable),
                        "the body of job " + std::to_string(id) +
                            " cannot be read back from the job log (its error is logged above)",
                        queue_.now().count());
}

void BeanstalkDispatcher::append_reserve_end(SessionId session, const ReserveResult& result,
                                             std::string& out) {
  if (result.outcome == Outcome::kOk) {
    if (auto body = queue_.body(*result.job, body_)) {
      bs::append_job(out, bs::JobReply::kReserved, result.job->id, *body);
    } else {
      // The client never learns the id: give the job back for another try (or a delete).
      queue_.unreserve(session, result.job->id);
      note_unreadable(result.job->id);
      bs::append_reply(out, Reply::kInternalError);
    }
  } else {
    append_outcome(out, result.outcome, Reply::kInternalError);
  }
}

BeanstalkDispatcher::Next BeanstalkDispatcher::handle(SessionId session, bs::Request&& request,
                                                      std::string& out) {
  bs::count_command(commands_, request);
  Next next = Next::kContinue;
  noted_ = false;
  const std::size_t before = out.size();
  auto reserve_reply = [&](const ReserveResult& result) {
    if (result.outcome == Outcome::kWaiting) {
      next = Next::kWaiting;
    } else {
      append_reserve_end(session, result, out);
    }
  };
  auto not_ours = [&] {
    noted_ = true;  // not the journal's refusal
    bs::append_reply(out, Reply::kInternalError);
  };
  std::visit(
      Overloaded{
          [&](bs::Put& put) {
            PutResult r =
                queue_.put(session, put.priority, put.delay, put.ttr, std::move(put.body));
            append_on_ok(out, r.outcome, [&] { bs::append_inserted(out, r.id); });
          },
          [&](bs::Reserve&) { reserve_reply(queue_.reserve(session, std::nullopt)); },
          [&](bs::ReserveWithTimeout& r) { reserve_reply(queue_.reserve(session, r.timeout)); },
          [&](bs::ReserveJob& r) { reserve_reply(queue_.reserve_job(session, r.id)); },
          [&](bs::Delete& r) {
            append_outcome(out, queue_.remove(session, r.id), Reply::kDeleted);
          },
          [&](bs::Release& r) {
            append_outcome(out, queue_.release(session, r.id, r.priority, r.delay),
                           Reply::kReleased);
          },
          [&](bs::Bury& r) {
            append_outcome(out, queue_.bury(session, r.id, r.priority), Reply::kBuried);
          },
          [&](bs::Touch& r) { append_outcome(out, queue_.touch(session, r.id), Reply::kTouched); },
          [&](bs::Peek& r) { append_found(out, queue_.peek(r.id)); },
          [&](bs::PeekReady&) { append_found(out, queue_.peek_ready(session)); },
          [&](bs::PeekDelayed&) { append_found(out, queue_.peek_delayed(session)); },
          [&](bs::PeekBuried&) { append_found(out, queue_.peek_buried(session)); },
          [&](bs::Kick& r) { bs::append_kicked_count(out, queue_.kick(session, r.bound)); },
          [&](bs::KickJob& r) { append_outcome(out, queue_.kick_job(r.id), Reply::kKicked); },
          [&](bs::StatsJob& r) { append_stats(out, queue_.job_stats(r.id), bs::job_stats_yaml); },
          [&](bs::StatsTube& r) {
            append_stats(out, queue_.tube_stats(r.tube), bs::tube_stats_yaml);
          },
          [&](bs::Stats&) { bs::append_ok(out, bs::server_stats_yaml(server_stats())); },
          [&](bs::ListTubes&) {
            std::vector<std::string_view> names = queue_.tube_names();
            bs::append_ok(out, bs::tube_list_yaml(names));
          },
          // The session's tubes are the front's (SessionTubes): it never hands these over.
          [&](bs::Use&) { not_ours(); },
          [&](bs::Watch&) { not_ours(); },
          [&](bs::Ignore&) { not_ours(); },
          [&](bs::ListTubeUsed&) { not_ours(); },
          [&](bs::ListTubesWatched&) { not_ours(); },
          [&](bs::Quit&) { next = Next::kClose; },
          [&](bs::PauseTube& r) {
            append_outcome(out, queue_.pause_tube(r.tube, r.delay), Reply::kPaused);
          },
          [&](bs::ProtocolError& e) { bs::append_reply(out, bs::reply_for(e)); },
      },
      request);
  // Any other INTERNAL_ERROR is an outcome of the queue: its journal refused the change.
  constexpr std::string_view kInternal = "INTERNAL_ERROR\r\n";
  if (!noted_ && std::string_view(out).substr(before) == kInternal) {
    internal_errors_.note(static_cast<std::size_t>(InternalErrorCause::kLogFailed),
                          queue_.refusal_reason(), queue_.now().count());
  }
  return next;
}

bs::ServerStats BeanstalkDispatcher::server_stats() const {
  QueueCounters q = queue_.counters();
  bs::ServerStats s;
  fill_job_counts(q, s);
  s.commands = commands_;
  s.max_job_size = info_.max_job_size;
  s.connections = q.sessions;
  s.producers = q.producers;
  s.workers = q.workers;
  s.waiting = q.waiting;
  s.total_connections = q.total_sessions;
  fill_process_stats(info_, s);
  s.uptime = std::chrono::duration_cast<std::chrono::seconds>(queue_.now() - started_);
  s.binlog_max_size = bs::kBinlogMaxSize;  // no binlog here yet
  s.draining = queue_.draining();
  return s;
}

}  // namespace wheel::jobs
