// SPDX-License-Identifier: Apache-2.0
#include "periodic_deadline.h"

#include <limits>

namespace wheel::detail {

std::int64_t next_periodic_deadline(std::int64_t deadline_ns, std::int64_t period_ns,
                                    std::int64_t now_ns) {
  // 128-bit: deadline + k * period may pass the int64 range before it is clamped.
  __extension__ using Wide = __int128;
  constexpr Wide kMax = std::numeric_limits<std::int64_t>::max();
  const Wide deadline = deadline_ns;
  Wide next = deadline + period_ns;
  if (next <= now_ns) {
    // Periods were missed: they coalesce into the run that just returned.
    next = deadline + ((static_cast<Wide>(now_ns) - deadline) / period_ns + 1) * period_ns;
  }
  return static_cast<std::int64_t>(next > kMax ? kMax : next);
}

}  // namespace wheel::detail
