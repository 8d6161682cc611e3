// SPDX-License-Identifier: Apache-2.0
// Internal. The fixed-rate arithmetic of periodic timeouts, apart so that it can be tested alone.
#pragma once

#include <cstdint>

namespace wheel::detail {

// The deadline of the next run of a periodic timeout of period `period_ns` (> 0) whose last run
// was due at `deadline_ns`, the run having returned at `now_ns` (all in nanoseconds since the
// timer's start): deadline + period, or, when that has passed too, the first deadline
// + k * period after `now_ns` (missed periods coalesce instead of running in a burst). Exact
// integer arithmetic on the original grid, so runs never drift; saturates at the int64 maximum.
std::int64_t next_periodic_deadline(std::int64_t deadline_ns, std::int64_t period_ns,
                                    std::int64_t now_ns);

}  // namespace wheel::detail
