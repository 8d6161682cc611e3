// SPDX-License-Identifier: Apache-2.0
// The implementations of wheel-idle-bench (see per_read_driver.h). Each returns a new object
// the caller owns. make_asio_per_read exists only when Boost was found (WHEEL_HAVE_ASIO).
#pragma once

#include "per_read_driver.h"

namespace wheel::bench {

PerReadImpl* make_wheel_per_read(const PerReadParams& p);
PerReadImpl* make_libuv_per_read(const PerReadParams& p);
#ifdef WHEEL_HAVE_ASIO
PerReadImpl* make_asio_per_read(const PerReadParams& p);
#endif

}  // namespace wheel::bench
