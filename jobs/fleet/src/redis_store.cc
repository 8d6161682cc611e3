// SPDX-License-Identifier: Apache-2.0
#include "wheel/jobs/fleet/redis_store.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <utility>

#include <spdlog/spdlog.h>

#include "redis_batches.h"
#include "redis_replies.h"
#include "redis_scripts.h"
#include "redis_store_internal.h"
#include "wheel/jobs/fleet/redis_shards.h"
#include "wheel/logger.h"

namespace wheel::jobs {

using namespace redis_store_detail;  // redis_store_internal.h

RedisStore::RedisStore(RedisLink link, RedisStoreOptions options)
    : link_(link), options_(std::move(options)), scripts_(std::make_shared<Scripts>()) {
  for (std::string& prefix : redis_shard_prefixes(options_.prefix, options_.shards)) {
    const auto n = static_cast<std::uint32_t>(shards_.size());
    auto batches = std::make_shared<RedisBatches>(link_, prefix, options_.shards, n);
    shards_.push_back({prefix, {prefix + "j"}, batches});
    link_.add_turn_end([batches = std::weak_ptr<RedisBatches>(batches)] {
      if (auto b = batches.lock()) b->send_queued();
    });
  }
  for (RedisScript* s :
       {&scripts_->reserve_job, &scripts_->release, &scripts_->bury, &scripts_->touch,
        &scripts_->kick, &scripts_->kick_job, &scripts_->peek, &scripts_->peek_tube,
        &scripts_->stats_job, &scripts_->stats_tube, &scripts_->stats, &scripts_->pause_tube,
        &scripts_->scan, &scripts_->give_back, &scripts_->list_jobs, &scripts_->move}) {
    link_.preload(s);
  }
}

std::uint32_t RedisStore::shard_of(std::uint64_t id) const {
  return redis_shard_of(id, shards());
}

std::vector<std::string> RedisStore::event_channels() const {
  std::vector<std::string> out;
  for (const Shard& s : shards_) out.push_back(s.prefix + "ev");
  return out;
}

void RedisStore::put(std::string_view tube, std::uint32_t priority, Millis delay, Millis ttr,
                     std::string_view body, Done<InsertResult> done) {
  const Shard& s = shards_[next_put_++ % shards_.size()];
  s.batches->put(tube, priority, delay, ttr, body, std::move(done));
}

namespace {

// {1|0, now[, value]} (kick: {count, now})
void read_change(const RedisValue& v, ChangeResult& r, bool count) {
  if (!check(v, r, 2)) return;
  const std::int64_t first = as_int(at(v, 0));
  if (count) {
    r.value = first;
    r.now = as_int(at(v, 1));
    return;
  }
  if (first != 1) {
    r.status = StoreStatus::kNotFound;
    r.now = as_int(at(v, 1));
    return;
  }
  if (v.elements.size() > 2) {
    r.value = as_int(at(v, 1));
    r.now = as_int(at(v, 2));
  } else {
    r.now = as_int(at(v, 1));
  }
}

void read_changed(const RedisValue& v, ChangeResult& r) {
  read_change(v, r, false);
}

void read_peek(const RedisValue& v, PeekResult& r) {
  if (!found(v, r, 3)) return;
  r.id = static_cast<std::uint64_t>(as_int(at(v, 1)));
  r.body = at(v, 2).str;
}

}  // namespace

void RedisStore::reserve_job(std::uint64_t id, Done<ClaimResult> done) {
  const Shard& s = shard(id);
  link_.eval(scripts_->reserve_job, s.keys, {s.prefix, member(id)},
             [done = std::move(done)](const RedisValue& v) {
               done(std::move(redis_replies::read_claims(v, 1).front()));
             });
}

void RedisStore::remove(std::uint64_t id, std::uint64_t token, Done<ChangeResult> done) {
  shard(id).batches->remove(id, token, std::move(done));
}

void RedisStore::release(std::uint64_t id, std::uint64_t token,
                         std::optional<std::uint32_t> priority, Millis delay, bool counted,
                         Done<ChangeResult> done) {
  const Shard& s = shard(id);
  link_.eval(scripts_->release, s.keys,
             {s.prefix, member(id), std::to_string(token),
              priority ? std::to_string(*priority) : "-1", ms(delay), counted ? "1" : "0"},
             answer(std::move(done), read_changed));
}

void RedisStore::bury(std::uint64_t id, std::uint64_t token, std::uint32_t priority,
                      Done<ChangeResult> done) {
  const Shard& s = shard(id);
  link_.eval(scripts_->bury, s.keys,
             {s.prefix, member(id), std::to_string(token), std::to_string(priority)},
             answer(std::move(done), read_changed));
}

void RedisStore::touch(std::uint64_t id, std::uint64_t token, Done<ChangeResult> done) {
  const Shard& s = shard(id);
  link_.eval(scripts_->touch, s.keys, {s.prefix, member(id), std::to_string(token)},
             answer(std::move(done), read_changed));
}

namespace {

// One kick, script after script (RedisStore::kick). The first script picks buried or delayed
// jobs and the rest keep to that kind, as one beanstalkd kick does.
struct KickRun {
  RedisLink link;
  std::vector<std::string> keys;
  std::shared_ptr<const void> scripts;  // keeps `script` alive past the store
  RedisScript* script;
  std::vector<std::string> args;  // prefix, tube, this script's bound, kind ("-": pick)
  std::uint64_t left;
  ChangeResult result;
  std::function<void(ChangeResult&&)> done;
};

void kick_step(const std::shared_ptr<KickRun>& k) {
  const std::uint64_t n = std::min(k->left, kMaxKickPerScript);
  k->args[2] = std::to_string(n);
  k->link.eval(*k->script, k->keys, k->args, [k, n](const RedisValue& v) {
    ChangeResult r;
    read_change(v, r, true);
    if (r.status != StoreStatus::kOk) {
      if (k->result.value == 0) return k->done(std::move(r));
      logger()->warn("wheel-jobs: a kick stopped after {} jobs: {}", k->result.value, r.error);
      return k->done(std::move(k->result));
    }
    k->result.value += r.value;
    k->result.now = r.now;
    k->left -= static_cast<std::uint64_t>(r.value);
    if (v.elements.size() > 2) k->args[3] = at(v, 2).str;
    if (static_cast<std::uint64_t>(r.value) < n || k->left == 0)
      return k->done(std::move(k->result));
    kick_step(k);
  });
}

}  // namespace

void RedisStore::kick_on(std::size_t s, std::string_view tube, std::uint64_t bound,
                         Done<ChangeResult> done) {
  kick_step(std::make_shared<KickRun>(KickRun{link_,
                                              shards_[s].keys,
                                              scripts_,
                                              &scripts_->kick,
                                              {shards_[s].prefix, std::string(tube), "", "-"},
                                              bound,
                                              ChangeResult{},
                                              std::move(done)}));
}

void RedisStore::kick_job(std::uint64_t id, Done<ChangeResult> done) {
  const Shard& s = shard(id);
  link_.eval(scripts_->kick_job, s.keys, {s.prefix, member(id)},
             answer(std::move(done), read_changed));
}

void RedisStore::peek(std::uint64_t id, Done<PeekResult> done) {
  const Shard& s = shard(id);
  link_.eval(scripts_->peek, s.keys, {s.prefix, member(id)}, answer(std::move(done), read_peek));
}

void RedisStore::peek_tube_on(std::size_t s, std::string_view tube, PeekWhich which,
                              Done<PeekResult> done) {
  const char* kind = which == PeekWhich::kReady ? "r" : which == PeekWhich::kDelayed ? "d" : "b";
  link_.eval(scripts_->peek_tube, shards_[s].keys, {shards_[s].prefix, std::string(tube), kind},
             answer(std::move(done), read_peek));
}

void RedisStore::list_jobs_on(std::size_t s, std::string_view tube, PeekWhich which,
                              std::size_t offset, std::size_t scan, std::size_t preview,
                              std::string_view needle, std::size_t limit,
                              Done<JobListResult> done) {
  const char* kind = which == PeekWhich::kReady ? "r" : which == PeekWhich::kDelayed ? "d" : "b";
  link_.eval(
      scripts_->list_jobs, shards_[s].keys,
      {shards_[s].prefix, std::string(tube), kind, std::to_string(scan), std::to_string(preview),
       std::string(needle), std::to_string(limit), std::to_string(offset)},
      answer(std::move(done), [](const RedisValue& v, JobListResult& r) {
        if (!check(v, r, 2)) return;
        r.looked = count_at(v, 0);
        r.total = count_at(v, 1);
        for (std::size_t e = 2; e + 4 < v.elements.size(); e += 5) {
          JobListResult::Entry entry;
          entry.id = count_at(v, e);
          entry.priority = static_cast<std::uint32_t>(count_at(v, e + 1));
          entry.body_size = count_at(v, e + 2);
          entry.time_left = as_int(at(v, e + 3));
          entry.preview = at(v, e + 4).str;
          r.jobs.push_back(std::move(entry));
        }
      }));
}

void RedisStore::move_on(std::size_t s, std::string_view from, std::string_view to, PeekWhich which,
                         std::size_t count, Done<ChangeResult> done) {
  const char* kind = which == PeekWhich::kReady ? "r" : which == PeekWhich::kDelayed ? "d" : "b";
  std::vector<std::string> args{shards_[s].prefix, std::string(from), std::string(to), kind,
                                std::to_string(count)};
  if (shards_.size() > 1) {
    args.push_back(std::to_string(shards_.size()));
    args.push_back(std::to_string(s));
  }
  link_.eval(scripts_->move, shards_[s].keys, std::move(args),
             answer(std::move(done),
                    [](const RedisValue& v, ChangeResult& r) { read_change(v, r, true); }));
}

void RedisStore::pause_tube_on(std::size_t s, std::string_view tube, Millis delay, bool known,
                               Done<ChangeResult> done) {
  link_.eval(scripts_->pause_tube, shards_[s].keys,
             {shards_[s].prefix, std::string(tube), ms(delay), known ? "1" : "0"},
             answer(std::move(done), read_changed));
}

void RedisStore::scan_on(std::size_t s, std::size_t limit, const std::vector<std::string>& tubes,
                         Done<ScanResult> done) {
  std::vector<std::string> args{shards_[s].prefix, std::to_string(limit),
                                std::to_string(tubes.size())};
  args.insert(args.end(), tubes.begin(), tubes.end());
  link_.eval(scripts_->scan, shards_[s].keys, args,
             answer(std::move(done), [](const RedisValue& v, ScanResult& r) {
               if (check(v, r, 2)) {
                 r.now = as_int(at(v, 0));
                 r.first_timer = as_int(at(v, 1));
                 for (std::size_t i = 2; i < v.elements.size(); ++i) {
                   const RedisValue& t = v.elements[i];
                   r.tubes.push_back({at(t, 0).str, as_int(at(t, 1)) == 1, as_int(at(t, 2))});
                 }
               }
             }));
}

void RedisStore::give_back_on(std::size_t s,
                              const std::vector<std::pair<std::uint64_t, std::uint64_t>>& leases,
                              Done<ChangeResult> done) {
  // One result for all the batches: the count, the first error, the last clock.
  struct Total {
    ChangeResult result;
    std::size_t left = 0;
    Done<ChangeResult> done;
  };
  auto total = std::make_shared<Total>();
  total->done = std::move(done);
  // An empty list still runs one script: `done` always comes from Redis (or its error).
  const std::size_t batches =
      std::max<std::size_t>(1, (leases.size() + kMaxGiveBackPerScript - 1) / kMaxGiveBackPerScript);
  total->left = batches;
  for (std::size_t b = 0; b < batches; ++b) {
    const std::size_t from = b * kMaxGiveBackPerScript;
    const std::size_t n = std::min(kMaxGiveBackPerScript, leases.size() - from);
    std::vector<std::string> args{shards_[s].prefix, std::to_string(n)};
    args.reserve(2 + 2 * n);
    for (std::size_t i = from; i < from + n; ++i) {
      args.push_back(member(leases[i].first));
      args.push_back(std::to_string(leases[i].second));
    }
    link_.eval(scripts_->give_back, shards_[s].keys, args, [total](const RedisValue& v) {
      ChangeResult r;
      read_change(v, r, true);
      if (r.status == StoreStatus::kOk) {
        total->result.value += r.value;
        total->result.now = r.now;
      } else if (total->result.status == StoreStatus::kOk) {
        total->result.status = r.status;
        total->result.error = r.error;
      }
      if (--total->left == 0) total->done(std::move(total->result));
    });
  }
}

}  // namespace wheel::jobs
