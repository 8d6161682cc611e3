// SPDX-License-Identifier: Apache-2.0
// Millis: the one duration type of the job model and everything above it (delays, TTRs, pauses,
// timeouts), whole milliseconds.
#pragma once

#include <chrono>

namespace wheel::jobs {

using Millis = std::chrono::milliseconds;

}  // namespace wheel::jobs
