// SPDX-License-Identifier: Apache-2.0
// QueueConsole: the web console's ConsoleBackend on a JobQueue in this process (wheel-jobs in
// memory, or on its log with --dir). Reads look at the queue's structures directly and answer
// at once; lists walk each tube's heaps from the top without taking a job out (best-first, so
// a page of N after O others costs O((O + N) log(O + N)) whatever the tube holds); a search
// looks at no more jobs than it is told. A change runs through `run_outside`
// (BeanstalkServerHandler::run_outside: the queue's clock, timer and log kept in step) in a session
// of its own, opened and closed around it, and answers once the journal says it is durable (at once
// in memory; after the log's sync under its --fsync policy); while the journal says changes wait (a
// disk behind) it answers kUnavailable and changes nothing.
//
// Threads: loop thread only (the queue's).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "wheel/jobs/console/console_backend.h"
#include "wheel/jobs/model/job_queue.h"
#include "wheel/jobs/model/queue_journal.h"

namespace wheel::jobs::console {

class QueueConsole final : public ConsoleBackend {
 public:
  using RunOutside = std::function<void(const std::function<void()>& change)>;

  // `queue` and `journal` (the queue's) must outlive it. `kind`: "memory" or "log".
  // `run_outside` runs a change (null: run it directly, as a test on a hand-moved queue does).
  // `connections`: this node's client count (null: 0).
  QueueConsole(JobQueue& queue, QueueJournal& journal, std::string kind, RunOutside run_outside,
               std::function<std::uint64_t()> connections);

  std::string_view kind() const override { return kind_; }
  void overview(std::size_t max_tubes, Done<ConsoleOverview> done) override;
  void tube(std::string_view name, ConsoleLimits limits, Done<ConsoleTubeView> done) override;
  void search(std::string_view tube, std::string_view needle, std::size_t scan,
              ConsoleLimits limits, Done<ConsoleSearch> done) override;
  void job(std::uint64_t id, Done<ConsoleJobView> done) override;
  void kick(std::string_view tube, std::uint64_t bound, Done<ConsoleChange> done) override;
  void kick_job(std::uint64_t id, Done<ConsoleChange> done) override;
  void remove(std::uint64_t id, Done<ConsoleChange> done) override;
  void pause(std::string_view tube, Millis delay, Done<ConsoleChange> done) override;
  void put(std::string_view tube, ConsolePut put, Done<ConsoleChange> done) override;
  void move(std::string_view from, std::string_view to, ConsoleList list, std::uint64_t count,
            Done<ConsoleChange> done) override;
  ConsoleHistogram lateness() const override;

 private:
  ConsoleTube figures(const Tube& tube) const;
  // `job` as a list or page shows it, with at most `body_bytes` of its body.
  ConsoleJob describe(const Job& job, std::size_t body_bytes, bool with_stats) const;
  // Runs `change` (which sets `*answer`) unless changes must wait, then answers `done` once the
  // journal says it is durable.
  void change(Done<ConsoleChange> done, std::function<void(ConsoleChange&)> change);

  JobQueue& queue_;
  QueueJournal& journal_;
  std::string kind_;
  RunOutside run_outside_;
  std::function<std::uint64_t()> connections_;
};

}  // namespace wheel::jobs::console
