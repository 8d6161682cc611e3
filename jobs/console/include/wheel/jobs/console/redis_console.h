// SPDX-License-Identifier: Apache-2.0
// RedisConsole: the web console's ConsoleBackend on the Redis store a fleet of wheel-jobs shares
// (--store redis://): every tube, job and count is the fleet's, whichever node serves the page;
// the connection and waiting counts and the lateness histogram are this node's. Each call is a
// few store scripts (the overview: list-tubes, then stats-tube per listed tube, pipelined; a
// tube: its stats and one list_jobs script per state; a search: list_jobs with the bound, state
// by state until the bound is spent), so a page costs Redis what a few protocol commands do.
// A tube's deliveries and its ready jobs' waits come from counters and a zset of ready times the
// store's scripts keep (jobs/fleet/lua/prologue.lua); its clients on other nodes are not known
// (the counts are 0).
//
// Threads: loop thread only (the store's client's loop).
#pragma once

#include <memory>

#include "wheel/jobs/console/console_backend.h"
#include "wheel/jobs/fleet/redis_jobs_handler.h"
#include "wheel/jobs/fleet/redis_store.h"

namespace wheel::jobs::console {

class RedisConsole final : public ConsoleBackend {
 public:
  // `store` and `handler` (serving from `store`) must outlive it; an answer that comes after it
  // is gone is dropped.
  RedisConsole(RedisStore& store, const RedisJobsHandler& handler);
  ~RedisConsole() override;
  RedisConsole(const RedisConsole&) = delete;
  RedisConsole& operator=(const RedisConsole&) = delete;

  std::string_view kind() const override { return "redis"; }
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
  RedisStore& store_;
  const RedisJobsHandler& handler_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace wheel::jobs::console
