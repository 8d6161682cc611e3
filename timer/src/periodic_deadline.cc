// SPDX-License-Identifier: Apache-2.0
#include "periodic_deadline.h"

#include <limits>

namespace wheel::detail {

std::int64_t next_periodic_deadline(std::int64_t deadline_ns, std::int64_t period_ns,
                                    std::int64_t tick_ns, std::int64_t now_ns) {
  // 128-bit: deadline + k * period may pass the int64 range before it is clamped.
  __extension__ using Wide = __int128;
  constexpr Wide kMax = std::numeric_limits<std::int64_t>::max();
  const Wide deadline = deadline_ns;
  // The start of the tick `now` is in (floor division, for a negative `now` too).
  Wide current = static_cast<Wide>(now_ns) / tick_ns;
  if (now_ns < 0 && now_ns % tick_ns != 0) --current;
  const Wide tick_start = current * tick_ns;
  Wide next = deadline + period_ns;
  if (next < tick_start) {
    // Its tick has ended: so have the periods up to `now`'s tick; they coalesce into the run
    // that just returned. The next run is the first grid point >= tick_start (k >= 2 here).
    next = deadline + (tick_start - deadline + period_ns - 1) / period_ns * period_ns;
  }
  return static_cast<std::int64_t>(next > kMax ? kMax : next);
}

}  // namespace wheel::detail
