// SPDX-License-Identifier: Apache-2.0
// JobQueueLimits: the bounds of a JobQueue's memory. Past one of them the command that would
// cross it is refused with OUT_OF_MEMORY (beanstalkd's reply when it cannot allocate) and
// nothing changes. Plain data; JobQueue's constructor checks them.
#pragma once

#include <cstdint>

namespace wheel::jobs {

struct JobQueueLimits {
  // Jobs held, in every state. REQUIRES >= 1.
  std::uint64_t max_jobs = 10'000'000;
  // Bytes of job bodies held (the bodies dominate a queue's memory). REQUIRES >= 1.
  std::uint64_t max_body_bytes = std::uint64_t{4} << 30;
  // Tubes that exist at once ("default" included; a tube costs about 300 bytes while it
  // exists). REQUIRES >= 1.
  std::uint64_t max_tubes = 100'000;
};

}  // namespace wheel::jobs
