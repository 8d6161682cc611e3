// SPDX-License-Identifier: Apache-2.0
// The error HashedWheelTimer::new_timeout() throws when max_pending_timeouts is reached.
#pragma once

#include <stdexcept>

namespace wheel {

class RejectedExecutionError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace wheel
