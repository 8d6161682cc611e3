// SPDX-License-Identifier: Apache-2.0
// The JSON form of a percentile summary (percentiles.h), the same in every report of wheel::load
// (wheel-load's --json, wheel-jobs-load's figures).
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

#include "wheel/load/percentiles.h"

namespace wheel::load {

// {"p50", "p90", "p99", "max", "min", "count"}, the figures rounded to three decimals
// (microseconds of a millisecond figure: the finest that loopback timing honestly gives).
// Without a summary (no samples) every figure is null and count 0: never a made-up 0.
// Pure function, safe from any thread.
nlohmann::json percentiles_json(const std::optional<PercentileSummary>& summary);

}  // namespace wheel::load
