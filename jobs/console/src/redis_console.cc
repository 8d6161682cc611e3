// SPDX-License-Identifier: Apache-2.0
#include "wheel/jobs/console/redis_console.h"

#include <utility>
#include <vector>

#include "lateness_histogram.h"
#include "wheel/jobs/model/queue_metrics.h"

namespace wheel::jobs::console {
namespace {

// Copies a store result's status into a console answer; true when it was kOk.
bool take_status(const StoreResult& r, ConsoleAnswer& a, std::string_view what) {
  switch (r.status) {
    case StoreStatus::kOk:
      return true;
    case StoreStatus::kNotFound:
      a.status = ConsoleStatus::kNotFound;
      a.error = std::string(what) + " not found";
      return false;
    case StoreStatus::kOutOfMemory:
      a.status = ConsoleStatus::kFull;
      a.error = "Redis is out of memory (maxmemory): " + r.error;
      return false;
    default:
      a.status = ConsoleStatus::kUnavailable;
      a.error = "the Redis store did not answer: " + r.error;
      return false;
  }
}

ConsoleTube tube_of(std::string name, const TubeInfo& info) {
  const TubeStats& s = info.stats;
  ConsoleTube t;
  t.name = std::move(name);
  t.ready = s.ready;
  t.delayed = s.delayed;
  t.reserved = s.reserved;
  t.buried = s.buried;
  t.urgent = s.urgent;
  t.puts = s.total_jobs;
  t.paused = s.pause_time_left.count() > 0;
  t.pause_left_ms = s.pause_time_left.count();
  t.deliveries = info.deliveries;
  if (info.head_ready_age >= 0) t.head_wait_ms = info.head_ready_age;
  if (info.oldest_ready_age >= 0) t.oldest_ready_ms = info.oldest_ready_age;
  return t;
}

std::vector<ConsoleJob> jobs_of(const JobListResult& r, std::string_view tube, JobState state) {
  std::vector<ConsoleJob> out;
  for (const JobListResult::Entry& e : r.jobs) {
    ConsoleJob j;
    j.id = e.id;
    j.tube = std::string(tube);
    j.state = state;
    j.priority = e.priority;
    j.body_size = e.body_size;
    j.time_left_ms = e.time_left;
    j.body = e.preview;
    j.stats_known = false;
    out.push_back(std::move(j));
  }
  return out;
}

constexpr PeekWhich kStates[] = {PeekWhich::kReady, PeekWhich::kDelayed, PeekWhich::kBuried};
constexpr JobState kStateOf[] = {JobState::kReady, JobState::kDelayed, JobState::kBuried};

// One search, state by state, until the scan bound or the hits' bound is spent.
struct Search {
  RedisStore& store;
  std::string tube, needle;
  std::size_t scan;
  ConsoleLimits limits;
  ConsoleBackend::Done<ConsoleSearch> done;
  std::weak_ptr<bool> alive;
  ConsoleSearch result;
  std::uint64_t total = 0;
  std::size_t state = 0;

  static void next(const std::shared_ptr<Search>& s) {
    const std::size_t left = s->scan - static_cast<std::size_t>(s->result.scanned);
    const std::size_t hits_left = s->limits.jobs - s->result.hits.size();
    if (s->state == 3 || left == 0 || hits_left == 0) {
      s->result.complete = s->state == 3 && s->result.scanned >= s->total;
      return s->done(std::move(s->result));
    }
    s->store.list_jobs(s->tube, kStates[s->state], 0, left, s->limits.preview, s->needle, hits_left,
                       [s](JobListResult&& r) {
                         if (s->alive.expired()) return;
                         if (!take_status(r, s->result, "the tube")) {
                           return s->done(std::move(s->result));
                         }
                         s->result.scanned += r.looked;
                         s->total += r.total;
                         for (ConsoleJob& j : jobs_of(r, s->tube, kStateOf[s->state])) {
                           s->result.hits.push_back(std::move(j));
                         }
                         ++s->state;
                         next(s);
                       });
  }
};

}  // namespace

RedisConsole::RedisConsole(RedisStore& store, const RedisJobsHandler& handler)
    : store_(store), handler_(handler) {}

RedisConsole::~RedisConsole() = default;

void RedisConsole::overview(std::size_t max_tubes, Done<ConsoleOverview> done) {
  std::weak_ptr<bool> alive = alive_;
  store_.list_tubes([this, alive, max_tubes, done = std::move(done)](TubeList&& list) mutable {
    if (alive.expired()) return;
    auto o = std::make_shared<ConsoleOverview>();
    if (!take_status(list, *o, "the tube list")) return done(std::move(*o));
    const RedisJobsCounters c = handler_.counters();
    o->connections = c.connections;
    o->waiting = c.waiting;
    o->tubes_total = list.names.size();
    if (list.names.size() > max_tubes) list.names.resize(max_tubes);
    o->tubes.resize(list.names.size());
    if (o->tubes.empty()) return done(std::move(*o));
    auto pending = std::make_shared<std::size_t>(list.names.size());
    auto finish = std::make_shared<Done<ConsoleOverview>>(std::move(done));
    for (std::size_t i = 0; i < list.names.size(); ++i) {
      store_.tube_stats(list.names[i], false,
                        [alive, o, i, pending, finish, name = list.names[i]](TubeInfo&& info) {
                          if (alive.expired()) return;
                          if (info.status == StoreStatus::kOk) {
                            o->tubes[i] = tube_of(name, info);
                          } else if (info.status != StoreStatus::kNotFound) {
                            take_status(info, *o, "a tube");
                          } else {
                            o->tubes[i].name = name;  // dropped meanwhile: empty
                          }
                          const ConsoleTube& t = o->tubes[i];
                          o->ready += t.ready;
                          o->delayed += t.delayed;
                          o->reserved += t.reserved;
                          o->buried += t.buried;
                          if (--*pending == 0) (*finish)(std::move(*o));
                        });
    }
  });
}

void RedisConsole::tube(std::string_view name, ConsoleLimits limits, Done<ConsoleTubeView> done) {
  std::weak_ptr<bool> alive = alive_;
  store_.tube_stats(name, false,
                    [this, alive, limits, name = std::string(name),
                     done = std::move(done)](TubeInfo&& info) mutable {
                      if (alive.expired()) return;
                      auto v = std::make_shared<ConsoleTubeView>();
                      if (!take_status(info, *v, "tube '" + name + "'")) return done(std::move(*v));
                      v->tube = tube_of(name, info);
                      auto pending = std::make_shared<int>(3);
                      auto finish = std::make_shared<Done<ConsoleTubeView>>(std::move(done));
                      for (std::size_t s = 0; s < 3; ++s) {
                        store_.list_jobs(
                            name, kStates[s], limits.offset[s], limits.jobs, limits.preview, {},
                            limits.jobs, [alive, v, s, pending, finish, name](JobListResult&& r) {
                              if (alive.expired()) return;
                              if (take_status(r, *v, "tube '" + name + "'")) {
                                auto& list = s == 0 ? v->ready : s == 1 ? v->delayed : v->buried;
                                list = jobs_of(r, name, kStateOf[s]);
                              }
                              if (--*pending == 0) (*finish)(std::move(*v));
                            });
                      }
                    });
}

void RedisConsole::search(std::string_view tube, std::string_view needle, std::size_t scan,
                          ConsoleLimits limits, Done<ConsoleSearch> done) {
  auto s = std::make_shared<Search>(Search{store_,
                                           std::string(tube),
                                           std::string(needle),
                                           scan,
                                           limits,
                                           std::move(done),
                                           alive_,
                                           {},
                                           0,
                                           0});
  Search::next(s);
}

void RedisConsole::job(std::uint64_t id, Done<ConsoleJobView> done) {
  std::weak_ptr<bool> alive = alive_;
  store_.job_stats(id, [this, alive, id, done = std::move(done)](StoreJobInfo&& info) mutable {
    if (alive.expired()) return;
    ConsoleJobView v;
    if (!take_status(info, v, "job " + std::to_string(id))) return done(std::move(v));
    ConsoleJob& j = v.job;
    j.id = id;
    j.tube = info.tube;
    j.state = info.stats.state;
    j.priority = info.stats.priority;
    j.age_ms = info.stats.age.count();
    j.delay_ms = info.stats.delay.count();
    j.ttr_ms = info.stats.ttr.count();
    j.time_left_ms = info.stats.time_left.count();
    j.reserves = info.stats.reserves;
    j.timeouts = info.stats.timeouts;
    j.releases = info.stats.releases;
    j.buries = info.stats.buries;
    j.kicks = info.stats.kicks;
    store_.peek(id, [alive, v = std::move(v), done = std::move(done)](PeekResult&& p) mutable {
      if (alive.expired()) return;
      if (take_status(p, v, "job " + std::to_string(v.job.id))) {
        v.job.body_size = p.body.size();
        v.job.body = std::move(p.body);
      }
      done(std::move(v));
    });
  });
}

namespace {

// A change's answer from the store's.
ConsoleBackend::Done<ChangeResult> changed(std::weak_ptr<bool> alive,
                                           ConsoleBackend::Done<ConsoleChange> done,
                                           std::string what) {
  return
      [alive = std::move(alive), done = std::move(done), what = std::move(what)](ChangeResult&& r) {
        if (alive.expired()) return;
        ConsoleChange c;
        if (take_status(r, c, what)) c.value = static_cast<std::uint64_t>(r.value);
        done(std::move(c));
      };
}

}  // namespace

void RedisConsole::kick(std::string_view tube, std::uint64_t bound, Done<ConsoleChange> done) {
  store_.kick(tube, bound, changed(alive_, std::move(done), "tube '" + std::string(tube) + "'"));
}

void RedisConsole::kick_job(std::uint64_t id, Done<ConsoleChange> done) {
  store_.kick_job(id, [inner = changed(alive_, std::move(done), "job " + std::to_string(id))](
                          ChangeResult&& r) {
    r.value = 1;
    inner(std::move(r));
  });
}

void RedisConsole::remove(std::uint64_t id, Done<ConsoleChange> done) {
  store_.remove(id, 0, changed(alive_, std::move(done), "job " + std::to_string(id)));
}

void RedisConsole::pause(std::string_view tube, Millis delay, Done<ConsoleChange> done) {
  store_.pause_tube(tube, delay, false,
                    changed(alive_, std::move(done), "tube '" + std::string(tube) + "'"));
}

void RedisConsole::put(std::string_view tube, ConsolePut put, Done<ConsoleChange> done) {
  std::weak_ptr<bool> alive = alive_;
  store_.put(tube, put.priority, put.delay, put.ttr.count() == 0 ? Millis(1000) : put.ttr, put.body,
             [alive, done = std::move(done)](InsertResult&& r) {
               if (alive.expired()) return;
               ConsoleChange c;
               if (take_status(r, c, "the tube")) c.value = r.id;
               done(std::move(c));
             });
}

void RedisConsole::move(std::string_view from, std::string_view to, ConsoleList list,
                        std::uint64_t count, Done<ConsoleChange> done) {
  store_.move(from, to, kStates[list], count,
              changed(alive_, std::move(done), "tube '" + std::string(from) + "'"));
}

ConsoleHistogram RedisConsole::lateness() const {
  return lateness_histogram(handler_.metrics().delivery_lateness.read());
}

}  // namespace wheel::jobs::console
