// SPDX-License-Identifier: Apache-2.0
// RedisStore, the figures of one shard: stats-job, stats-tube, stats and list-tubes (their sums
// over the shards are in redis_store_shards.cc).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "redis_store_internal.h"
#include "wheel/jobs/fleet/redis_store.h"

namespace wheel::jobs {

using namespace redis_store_detail;  // redis_store_internal.h

void RedisStore::job_stats(std::uint64_t id, Done<StoreJobInfo> done) {
  const Shard& sh = shard(id);
  link_.eval(scripts_->stats_job, sh.keys, {sh.prefix, member(id)},
             answer(std::move(done), [id](const RedisValue& v, StoreJobInfo& r) {
               if (!found(v, r, 13)) return;
               auto& s = r.stats;
               r.tube = at(v, 1).str;
               s.id = id;
               s.state = state_of(at(v, 2).str);
               s.priority = static_cast<std::uint32_t>(as_int(at(v, 3)));
               s.age = Millis(as_int(at(v, 4)));
               s.delay = Millis(as_int(at(v, 5)));
               s.ttr = Millis(as_int(at(v, 6)));
               s.time_left = Millis(as_int(at(v, 7)));
               s.reserves = static_cast<std::uint32_t>(as_int(at(v, 8)));
               s.timeouts = static_cast<std::uint32_t>(as_int(at(v, 9)));
               s.releases = static_cast<std::uint32_t>(as_int(at(v, 10)));
               s.buries = static_cast<std::uint32_t>(as_int(at(v, 11)));
               s.kicks = static_cast<std::uint32_t>(as_int(at(v, 12)));
             }));
}

void RedisStore::tube_stats_on(std::size_t s, std::string_view tube, bool known,
                               Done<TubeInfo> done) {
  link_.eval(scripts_->stats_tube, shards_[s].keys,
             {shards_[s].prefix, std::string(tube), known ? "1" : "0"},
             answer(std::move(done), [](const RedisValue& v, TubeInfo& r) {
               if (!found(v, r, 11)) return;
               auto& s = r.stats;
               for (auto [i, field] : {std::pair{1, &TubeStats::urgent},
                                       {2, &TubeStats::ready},
                                       {3, &TubeStats::reserved},
                                       {4, &TubeStats::delayed},
                                       {5, &TubeStats::buried},
                                       {6, &TubeStats::total_jobs},
                                       {7, &TubeStats::cmd_delete},
                                       {8, &TubeStats::cmd_pause_tube}}) {
                 s.*field = count_at(v, static_cast<std::size_t>(i));
               }
               s.pause = Millis(as_int(at(v, 9)));
               s.pause_time_left = Millis(as_int(at(v, 10)));
               if (v.elements.size() >= 14) {
                 r.deliveries = count_at(v, 11);
                 r.oldest_ready_age = as_int(at(v, 12));
                 r.head_ready_age = as_int(at(v, 13));
               }
             }));
}

void RedisStore::totals_on(std::size_t s, Done<StoreTotals> done) {
  link_.eval(scripts_->stats, shards_[s].keys, {shards_[s].prefix},
             answer(std::move(done), [](const RedisValue& v, StoreTotals& r) {
               if (!check(v, r, 8)) return;
               std::size_t i = 0;
               for (std::uint64_t* field : {&r.urgent, &r.ready, &r.reserved, &r.delayed, &r.buried,
                                            &r.job_timeouts, &r.total_jobs, &r.tubes}) {
                 *field = count_at(v, i++);
               }
             }));
}

void RedisStore::list_tubes_on(std::size_t s, Done<TubeList> done) {
  // Each tube with its creation number (seq of its stats hash); a tube written before there
  // were numbers has none and comes first, by name.
  const std::string& p = shards_[s].prefix;
  if (shards_.size() > 1) {
    // A cluster denies SORT's GET: by name (list-tubes' order on a cluster).
    link_.command({"SORT", p + "tubes", "ALPHA"},
                  answer(std::move(done), [](const RedisValue& v, TubeList& r) {
                    if (!check(v, r, 0)) return;
                    for (const RedisValue& name : v.elements) r.names.push_back(name.str);
                  }));
    return;
  }
  link_.command({"SORT", p + "tubes", "BY", "nosort", "GET", "#", "GET", p + "t:*:s->seq"},
                answer(std::move(done), [](const RedisValue& v, TubeList& r) {
                  if (!check(v, r, 0)) return;
                  std::vector<std::pair<long long, std::string>> tubes;
                  for (std::size_t i = 0; i + 1 < v.elements.size(); i += 2) {
                    const RedisValue& seq = v.elements[i + 1];
                    tubes.emplace_back(seq.type == RedisValue::Type::kNil
                                           ? 0
                                           : std::strtoll(seq.str.c_str(), nullptr, 10),
                                       v.elements[i].str);
                  }
                  std::sort(tubes.begin(), tubes.end());
                  for (auto& [seq, name] : tubes) r.names.push_back(std::move(name));
                }));
}

}  // namespace wheel::jobs
