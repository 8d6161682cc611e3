// SPDX-License-Identifier: Apache-2.0
// RedisStore's scripts and reply readers, shared by its source files (redis_store.cc: the jobs,
// redis_store_stats.cc: the figures). Internal to jobs/fleet.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <utility>

#include "redis_replies.h"
#include "redis_scripts.h"
#include "wheel/jobs/model/job_stats.h"
#include "wheel/redis/redis_client.h"

namespace wheel::jobs {

// Reads (`false`: no WAIT with --store-replicas) promote what came due, which any later script
// would redo: nothing a client was told depends on a replica having it.
struct RedisStoreScripts {
  RedisScript reserve_job{redis_scripts::reserve_job()};
  RedisScript release{redis_scripts::release()};
  RedisScript bury{redis_scripts::bury()};
  RedisScript touch{redis_scripts::touch()};
  RedisScript kick{redis_scripts::kick()};
  RedisScript kick_job{redis_scripts::kick_job()};
  RedisScript peek{redis_scripts::peek(), false};
  RedisScript peek_tube{redis_scripts::peek_tube(), false};
  RedisScript stats_job{redis_scripts::stats_job(), false};
  RedisScript stats_tube{redis_scripts::stats_tube(), false};
  RedisScript stats{redis_scripts::stats(), false};
  RedisScript pause_tube{redis_scripts::pause_tube()};
  RedisScript scan{redis_scripts::scan(), false};
  RedisScript give_back{redis_scripts::give_back()};
  RedisScript list_jobs{redis_scripts::list_jobs(), false};
  RedisScript move{redis_scripts::move()};
};

namespace redis_store_detail {

// The reply readers' vocabulary, for `using namespace redis_store_detail` in the store's files.
using redis_replies::as_int;
using redis_replies::at;
using redis_replies::check;
using redis_replies::count_at;

// check(), then the script's found flag (element 0): true when it is 1 and the reply has at
// least `min_elements`; else false, with kNotFound when the reply itself was sound.
inline bool found(const RedisValue& v, StoreResult& r, std::size_t min_elements) {
  if (!check(v, r, 1)) return false;
  if (as_int(at(v, 0)) != 1 || v.elements.size() < min_elements) {
    r.status = StoreStatus::kNotFound;
    return false;
  }
  return true;
}

inline std::string ms(std::chrono::milliseconds d) {
  return std::to_string(d.count());
}

// The callback of one command: `read` fills a fresh Result from the reply, `done` gets it.
template <class Result, class Read>
RedisCallback answer(std::function<void(Result&&)> done, Read read) {
  return [done = std::move(done), read = std::move(read)](const RedisValue& v) {
    Result r;
    read(v, r);
    done(std::move(r));
  };
}

// A job's state from the script's letter.
inline JobState state_of(std::string_view st) {
  if (st == "d") return JobState::kDelayed;
  if (st == "x") return JobState::kReserved;
  if (st == "b") return JobState::kBuried;
  return JobState::kReady;
}

}  // namespace redis_store_detail
}  // namespace wheel::jobs
