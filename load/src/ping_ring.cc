// SPDX-License-Identifier: Apache-2.0
#include "wheel/load/ping_ring.h"

#include <algorithm>
#include <cassert>

namespace wheel::load {

PingRing::PingRing(std::chrono::milliseconds interval, std::chrono::milliseconds tick)
    : tick_ms_(static_cast<double>(tick.count())),
      slots_(static_cast<std::size_t>(std::max<std::int64_t>(1, interval / tick))) {
  assert(tick.count() > 0);
}

}  // namespace wheel::load
