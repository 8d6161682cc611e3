// SPDX-License-Identifier: Apache-2.0
// Session: what a JobQueue knows of one client connection: the tube it uses (put goes there),
// the tubes it watches (reserve takes from them; "default" at first), the jobs it holds
// reserved, and its blocked reserve if any. Opened and closed through JobQueue; closing one
// releases its reserved jobs to ready, as beanstalkd does when a client disconnects. Its tubes
// follow what the connection's front end decided (beanstalkd's rules for use, watch and ignore
// are SessionTubes', jobs/server).
//
// Threads: as the queue that owns it.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <vector>

#include "wheel/jobs/model/job.h"

namespace wheel::jobs {

struct Session {
  SessionId id = 0;
  Tube* used = nullptr;
  std::vector<Tube*> watched;        // in the order watched; never empty (the front's rule)
  std::set<std::uint64_t> reserved;  // job ids
  bool producer = false;             // has put a job (beanstalkd's current-producers)
  bool worker = false;               // has reserved (current-workers)
  // While blocked in a reserve: its place in the wait order, and when it ends (TIMED_OUT or
  // DEADLINE_SOON), if ever.
  std::optional<std::uint64_t> wait_seq;
  std::optional<Millis> wait_until;
  LoopWheel::Handle wait_timeout;  // the end of the wait, on the queue's wheel
};

}  // namespace wheel::jobs
