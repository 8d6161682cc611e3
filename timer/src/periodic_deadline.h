// SPDX-License-Identifier: Apache-2.0
// Internal. The fixed-rate arithmetic of periodic timeouts, apart so that it can be tested alone.
#pragma once

#include <cstdint>

namespace wheel::detail {

// The deadline of the next run of a periodic timeout of period `period_ns` (> 0) on a wheel of
// tick `tick_ns` (> 0), whose last run was due at `deadline_ns` and returned at `now_ns` (all in
// nanoseconds since the timer's start, ticks ending at multiples of `tick_ns`).
// The wheel runs a deadline at the end of its tick, so a run returns up to a tick or more after
// its own deadline. A grid point is missed only when its own tick has ended by `now_ns` (point
// < floor(now / tick) * tick): its run would come late. Result: deadline + period, or, when that
// is missed, the first deadline + k * period whose tick has not ended (missed periods coalesce
// into the run that just returned instead of running in a burst). So a period >= the tick gives
// one run per period, and any period at most one run per tick. Exact integer arithmetic on the
// original grid, so runs never drift; saturates at the int64 maximum.
std::int64_t next_periodic_deadline(std::int64_t deadline_ns, std::int64_t period_ns,
                                    std::int64_t tick_ns, std::int64_t now_ns);

}  // namespace wheel::detail
