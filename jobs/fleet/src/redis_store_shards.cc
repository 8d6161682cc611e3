// SPDX-License-Identifier: Apache-2.0
// RedisStore's commands on a tube or on the whole store, over its shards (redis_shards.h): with
// one shard, the shard's own command as it is; with S, one script per shard (at once, or in turn
// where each depends on the last) and the answers merged here.
#include <algorithm>
#include <map>
#include <memory>
#include <utility>

#include "redis_batches.h"
#include "wheel/jobs/fleet/redis_store.h"

namespace wheel::jobs {

namespace {

// Runs `ask(shard, done)` on every shard at once; `merge` gets the answers, shard 0's first.
template <class R, class Ask>
void gather(std::size_t shards, Ask ask, std::function<void(std::vector<R>&&)> merge) {
  struct Gathered {
    std::vector<R> results;
    std::size_t left;
    std::function<void(std::vector<R>&&)> merge;
  };
  auto g = std::make_shared<Gathered>();
  g->results.resize(shards);
  g->left = shards;
  g->merge = std::move(merge);
  for (std::size_t s = 0; s < shards; ++s) {
    ask(s, [g, s](R&& r) {
      g->results[s] = std::move(r);
      if (--g->left == 0) g->merge(std::move(g->results));
    });
  }
}

// The first failure among `results` (copied into `out`), if any.
template <class R>
bool failed(const std::vector<R>& results, StoreResult& out) {
  for (const R& r : results) {
    if (r.status == StoreStatus::kError || r.status == StoreStatus::kOutOfMemory) {
      out.status = r.status;
      out.error = r.error;
      out.now = r.now;
      return true;
    }
  }
  return false;
}

template <class R>
std::int64_t latest(const std::vector<R>& results) {
  std::int64_t now = 0;
  for (const R& r : results) now = std::max(now, r.now);
  return now;
}

// The earlier of two Redis times, -1 meaning none.
std::int64_t earlier(std::int64_t a, std::int64_t b) {
  if (a < 0) return b;
  if (b < 0) return a;
  return std::min(a, b);
}

// A change run shard after shard (kick, move), each up to what is left of a bound; ends at the
// bound, after the last shard, or at the first failure (reported only when nothing changed yet).
struct Chain {
  std::function<void(std::size_t shard, std::uint64_t left, std::function<void(ChangeResult&&)>)>
      one;  // captures the store: called only while `life` lasts
  std::size_t shards, next;
  std::uint64_t left;
  std::weak_ptr<char> life;
  ChangeResult total;
  std::function<void(ChangeResult&&)> done;
};

void chain_step(const std::shared_ptr<Chain>& c) {
  if (c->left == 0 || c->next == c->shards || c->life.expired()) {
    return c->done(std::move(c->total));
  }
  c->one(c->next++, c->left, [c](ChangeResult&& r) {
    if (r.status != StoreStatus::kOk) {
      if (c->total.value == 0) c->total = std::move(r);
      c->left = 0;
    } else {
      c->total.value += r.value;
      c->total.now = r.now;
      c->left -= std::min<std::uint64_t>(c->left, static_cast<std::uint64_t>(r.value));
    }
    chain_step(c);
  });
}

}  // namespace

void RedisStore::reserve(const std::vector<std::string>& tubes, Done<ClaimResult> done) {
  if (shards_.size() == 1) return shards_.front().batches->reserve(tubes, std::move(done));
  ClaimResult none;
  none.status = StoreStatus::kNotFound;
  none.next_known = true;
  const std::size_t start = next_reserve_++ % shards_.size();
  reserve_from(std::make_shared<const std::vector<std::string>>(tubes), start, shards_.size(),
               std::move(none), std::move(done));
}

void RedisStore::reserve_from(std::shared_ptr<const std::vector<std::string>> tubes, std::size_t s,
                              std::size_t left, ClaimResult so_far, Done<ClaimResult> done) {
  shards_[s].batches->reserve(
      *tubes, [this, life = std::weak_ptr<char>(life_), tubes, s, left, so_far = std::move(so_far),
               done = std::move(done)](ClaimResult&& r) mutable {
        if (r.status == StoreStatus::kOk) {
          // Other shards may hold ready jobs of the tube: the node's other waiters try again.
          r.more = std::max<std::uint64_t>(r.more, 1);
          r.next_known = false;
          return done(std::move(r));
        }
        so_far.now = std::max(so_far.now, r.now);
        if (r.status == StoreStatus::kNotFound) {
          so_far.next_due = earlier(so_far.next_due, r.next_known ? r.next_due : -1);
        } else if (so_far.error.empty()) {
          so_far.error = r.error;  // a shard that failed: the others may still have a job
          so_far.next_known = false;
        }
        if (left <= 1 || life.expired()) {
          if (!so_far.error.empty()) so_far.status = StoreStatus::kError;
          return done(std::move(so_far));
        }
        reserve_from(std::move(tubes), (s + 1) % shards_.size(), left - 1, std::move(so_far),
                     std::move(done));
      });
}

void RedisStore::kick(std::string_view tube, std::uint64_t bound, Done<ChangeResult> done) {
  if (shards_.size() == 1) return kick_on(0, tube, bound, std::move(done));
  // Shard after shard, each up to what is left of the bound; each shard kicks its buried jobs
  // if it has any, else its delayed ones.
  chain_step(std::make_shared<Chain>(Chain{
      [this, tube = std::string(tube)](std::size_t s, std::uint64_t left, Done<ChangeResult> d) {
        kick_on(s, tube, left, std::move(d));
      },
      shards_.size(),
      0,
      bound,
      life_,
      {},
      std::move(done)}));
}

void RedisStore::peek_tube(std::string_view tube, PeekWhich which, Done<PeekResult> done) {
  if (shards_.size() == 1) return peek_tube_on(0, tube, which, std::move(done));
  // The lowest id among the shards' heads (the oldest job; priority is not compared).
  gather<PeekResult>(
      shards_.size(),
      [this, tube = std::string(tube), which](std::size_t s, Done<PeekResult> d) {
        peek_tube_on(s, tube, which, std::move(d));
      },
      [done = std::move(done)](std::vector<PeekResult>&& all) {
        PeekResult out;
        if (failed(all, out)) return done(std::move(out));
        out.status = StoreStatus::kNotFound;
        out.now = latest(all);
        for (PeekResult& r : all) {
          if (r.status == StoreStatus::kOk && (out.status != StoreStatus::kOk || r.id < out.id)) {
            out = std::move(r);
          }
        }
        done(std::move(out));
      });
}

void RedisStore::tube_stats(std::string_view tube, bool known, Done<TubeInfo> done) {
  if (shards_.size() == 1) return tube_stats_on(0, tube, known, std::move(done));
  gather<TubeInfo>(
      shards_.size(),
      [this, tube = std::string(tube), known](std::size_t s, Done<TubeInfo> d) {
        tube_stats_on(s, tube, known, std::move(d));
      },
      [done = std::move(done)](std::vector<TubeInfo>&& all) {
        TubeInfo out;
        if (failed(all, out)) return done(std::move(out));
        out.status = StoreStatus::kNotFound;
        out.now = latest(all);
        for (const TubeInfo& r : all) {
          if (r.status != StoreStatus::kOk) continue;
          out.status = StoreStatus::kOk;
          TubeStats& s = out.stats;
          s.urgent += r.stats.urgent;
          s.ready += r.stats.ready;
          s.reserved += r.stats.reserved;
          s.delayed += r.stats.delayed;
          s.buried += r.stats.buried;
          s.total_jobs += r.stats.total_jobs;
          s.cmd_delete += r.stats.cmd_delete;
          // a pause is set on every shard: one pause-tube counts once
          s.cmd_pause_tube = std::max(s.cmd_pause_tube, r.stats.cmd_pause_tube);
          s.pause = std::max(s.pause, r.stats.pause);
          s.pause_time_left = std::max(s.pause_time_left, r.stats.pause_time_left);
          out.deliveries += r.deliveries;
          out.oldest_ready_age = std::max(out.oldest_ready_age, r.oldest_ready_age);
          out.head_ready_age = std::max(out.head_ready_age, r.head_ready_age);
        }
        done(std::move(out));
      });
}

void RedisStore::list_tubes(Done<TubeList> done) {
  if (shards_.size() == 1) return list_tubes_on(0, std::move(done));
  gather<TubeList>(
      shards_.size(), [this](std::size_t s, Done<TubeList> d) { list_tubes_on(s, std::move(d)); },
      [done = std::move(done)](std::vector<TubeList>&& all) {
        TubeList out;
        if (failed(all, out)) return done(std::move(out));
        // Each tube where it comes first in any shard's creation order.
        std::map<std::string, std::size_t> first;
        for (const TubeList& r : all) {
          for (std::size_t i = 0; i < r.names.size(); ++i) {
            auto [it, fresh] = first.emplace(r.names[i], i);
            if (!fresh) it->second = std::min(it->second, i);
          }
        }
        std::vector<std::pair<std::size_t, std::string>> order;
        for (auto& [name, i] : first) order.emplace_back(i, name);
        std::sort(order.begin(), order.end());
        for (auto& [i, name] : order) out.names.push_back(std::move(name));
        out.now = latest(all);
        done(std::move(out));
      });
}

void RedisStore::totals(Done<StoreTotals> done) {
  if (shards_.size() == 1) return totals_on(0, std::move(done));
  gather<StoreTotals>(
      shards_.size(), [this](std::size_t s, Done<StoreTotals> d) { totals_on(s, std::move(d)); },
      [this, life = std::weak_ptr<char>(life_),
       done = std::move(done)](std::vector<StoreTotals>&& all) mutable {
        StoreTotals out;
        if (failed(all, out)) return done(std::move(out));
        for (const StoreTotals& r : all) {
          for (auto field : {&StateCounts::urgent, &StateCounts::ready, &StateCounts::reserved,
                             &StateCounts::delayed, &StateCounts::buried,
                             &StateCounts::job_timeouts, &StateCounts::total_jobs}) {
            out.*field += r.*field;
          }
        }
        out.now = latest(all);
        if (life.expired()) return done(std::move(out));
        // A tube has a set entry on every shard it has jobs on: count the names once.
        list_tubes([out, done = std::move(done)](TubeList&& tubes) mutable {
          if (tubes.status != StoreStatus::kOk) {
            static_cast<StoreResult&>(out) = tubes;
          } else {
            out.tubes = tubes.names.size();
          }
          done(std::move(out));
        });
      });
}

void RedisStore::pause_tube(std::string_view tube, Millis delay, bool known,
                            Done<ChangeResult> done) {
  if (shards_.size() == 1) return pause_tube_on(0, tube, delay, known, std::move(done));
  // Every shard pauses the tube, even one that has none of its jobs yet (known): its reserves
  // must wait too. Unknown to the caller: only a tube that some shard has.
  auto pause_all = [this, tube = std::string(tube), delay](Done<ChangeResult> d) {
    gather<ChangeResult>(
        shards_.size(),
        [this, tube, delay](std::size_t s, Done<ChangeResult> one) {
          pause_tube_on(s, tube, delay, true, std::move(one));
        },
        [d = std::move(d)](std::vector<ChangeResult>&& all) {
          ChangeResult out;
          if (!failed(all, out)) out.now = latest(all);
          d(std::move(out));
        });
  };
  if (known) return pause_all(std::move(done));
  tube_stats(tube, false,
             [pause_all = std::move(pause_all), done = std::move(done)](TubeInfo&& info) mutable {
               if (info.status != StoreStatus::kOk) {
                 ChangeResult out;
                 static_cast<StoreResult&>(out) = info;
                 return done(std::move(out));
               }
               pause_all(std::move(done));
             });
}

void RedisStore::scan(std::size_t limit, const std::vector<std::string>& tubes,
                      Done<ScanResult> done) {
  if (shards_.size() == 1) return scan_on(0, limit, tubes, std::move(done));
  gather<ScanResult>(
      shards_.size(),
      [this, limit, tubes](std::size_t s, Done<ScanResult> d) {
        scan_on(s, limit, tubes, std::move(d));
      },
      [done = std::move(done)](std::vector<ScanResult>&& all) {
        ScanResult out;
        if (failed(all, out)) return done(std::move(out));
        out.now = latest(all);
        for (ScanResult& r : all) {
          out.first_timer = earlier(out.first_timer, r.first_timer);
          for (std::size_t i = 0; i < r.tubes.size(); ++i) {
            if (i == out.tubes.size()) out.tubes.push_back({r.tubes[i].name, false, -1});
            out.tubes[i].ready = out.tubes[i].ready || r.tubes[i].ready;
            out.tubes[i].next_due = earlier(out.tubes[i].next_due, r.tubes[i].next_due);
          }
        }
        for (auto& t : out.tubes) {
          if (t.ready) t.next_due = -1;
        }
        done(std::move(out));
      });
}

void RedisStore::list_jobs(std::string_view tube, PeekWhich which, std::size_t offset,
                           std::size_t scan, std::size_t preview, std::string_view needle,
                           std::size_t limit, Done<JobListResult> done) {
  if (shards_.size() == 1) {
    return list_jobs_on(0, tube, which, offset, scan, preview, needle, limit, std::move(done));
  }
  // The console's pages: each shard's part of the page, in shard order, at most `limit`.
  gather<JobListResult>(
      shards_.size(),
      [=, this, tube = std::string(tube), needle = std::string(needle)](std::size_t s,
                                                                        Done<JobListResult> d) {
        list_jobs_on(s, tube, which, offset, scan, preview, needle, limit, std::move(d));
      },
      [limit, done = std::move(done)](std::vector<JobListResult>&& all) {
        JobListResult out;
        if (failed(all, out)) return done(std::move(out));
        out.now = latest(all);
        for (JobListResult& r : all) {
          out.looked += r.looked;
          out.total += r.total;
          for (auto& job : r.jobs) {
            if (out.jobs.size() < limit) out.jobs.push_back(std::move(job));
          }
        }
        done(std::move(out));
      });
}

void RedisStore::move(std::string_view from, std::string_view to, PeekWhich which,
                      std::size_t count, Done<ChangeResult> done) {
  if (shards_.size() == 1) return move_on(0, from, to, which, count, std::move(done));
  // Shard after shard, each up to what is left (a job stays on its shard, in tube `to`).
  chain_step(std::make_shared<Chain>(
      Chain{[this, from = std::string(from), to = std::string(to), which](
                std::size_t s, std::uint64_t left, Done<ChangeResult> d) {
              move_on(s, from, to, which, static_cast<std::size_t>(left), std::move(d));
            },
            shards_.size(),
            0,
            count,
            life_,
            {},
            std::move(done)}));
}

void RedisStore::give_back(const std::vector<std::pair<std::uint64_t, std::uint64_t>>& leases,
                           Done<ChangeResult> done) {
  if (shards_.size() == 1) return give_back_on(0, leases, std::move(done));
  std::vector<std::vector<std::pair<std::uint64_t, std::uint64_t>>> by_shard(shards_.size());
  for (const auto& lease : leases) by_shard[shard_of(lease.first)].push_back(lease);
  gather<ChangeResult>(
      shards_.size(),
      [this, &by_shard](std::size_t s, Done<ChangeResult> d) {
        give_back_on(s, by_shard[s], std::move(d));
      },
      [done = std::move(done)](std::vector<ChangeResult>&& all) {
        ChangeResult out;
        if (failed(all, out)) return done(std::move(out));
        for (const ChangeResult& r : all) out.value += r.value;
        out.now = latest(all);
        done(std::move(out));
      });
}

}  // namespace wheel::jobs
