// SPDX-License-Identifier: Apache-2.0
// Session: what a JobQueue knows of one client connection: the tube it uses (put goes there),
// the tubes it watches (reserve takes from them; "default" at first), the jobs it holds
// reserved, and its blocked reserve if any. Opened and closed through JobQueue; closing one
// releases its reserved jobs to ready, as beanstalkd does when a client disconnects.
//
// Threads: as the queue that owns it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "wheel/jobs/model/job.h"

namespace wheel::jobs {

struct Session {
  SessionId id = 0;
  Tube* used = nullptr;
  std::vector<Tube*> watched;        // in the order watched; never empty
  std::set<std::uint64_t> reserved;  // job ids
  bool producer = false;             // has put a job (beanstalkd's current-producers)
  bool worker = false;               // has reserved (current-workers)
  // While blocked in a reserve: its place in the wait order, and when it ends (TIMED_OUT or
  // DEADLINE_SOON), if ever.
  std::optional<std::uint64_t> wait_seq;
  std::optional<Millis> wait_until;
  LoopWheel::Handle wait_timeout;  // the end of the wait, on the queue's wheel
};

// beanstalkd's session rules for `watch` and `ignore`, kept once for both backends: a
// JobQueue's sessions (a list of Tube*) and the Redis front's connections (a list of names).
//   watch T:  T already watched -> nothing changes; max_watched tubes watched -> OUT_OF_MEMORY;
//             else T is added at the end. The reply counts the tubes watched.
//   ignore T: T not watched -> nothing changes; T the only tube watched -> NOT_IGNORED; else T
//             is removed. The reply counts the tubes watched.
// (`use` has no rule beyond naming the tube; a JobQueue refuses a tube beyond max_tubes.)
// How a watch or ignore ended, and the tubes watched afterwards.
struct WatchListStep {
  enum class Result : std::uint8_t { kOk, kFull, kLast };  // kFull: watch only; kLast: ignore
  Result result = Result::kOk;
  std::size_t watching = 0;
};

// watch: `name_of(entry)` gives an entry's tube name; `make()` the new entry (nullopt: no room
// for the tube, which answers like a full list). `max_watched` >= 1.
template <class T, class NameOf, class Make>
WatchListStep watch_tube(std::vector<T>& watched, std::string_view tube, std::uint64_t max_watched,
                         NameOf name_of, Make make) {
  using Result = WatchListStep::Result;
  const auto same = [&](const T& e) { return std::string_view(name_of(e)) == tube; };
  if (std::any_of(watched.begin(), watched.end(), same)) return {Result::kOk, watched.size()};
  if (watched.size() >= max_watched) return {Result::kFull, watched.size()};
  std::optional<T> entry = make();
  if (!entry) return {Result::kFull, watched.size()};
  watched.push_back(std::move(*entry));
  return {Result::kOk, watched.size()};
}

// ignore: `removed(entry)` runs for the entry taken out (after it left the list).
template <class T, class NameOf, class Removed>
WatchListStep ignore_tube(std::vector<T>& watched, std::string_view tube, NameOf name_of,
                          Removed removed) {
  using Result = WatchListStep::Result;
  const auto it = std::find_if(watched.begin(), watched.end(),
                               [&](const T& e) { return std::string_view(name_of(e)) == tube; });
  if (it == watched.end()) return {Result::kOk, watched.size()};
  if (watched.size() == 1) return {Result::kLast, 1};
  T entry = std::move(*it);
  watched.erase(it);
  removed(entry);
  return {Result::kOk, watched.size()};
}

}  // namespace wheel::jobs
