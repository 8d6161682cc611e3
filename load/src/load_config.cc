// SPDX-License-Identifier: Apache-2.0
#include "wheel/load/load_config.h"

#include <cmath>

namespace wheel::load {

Role role_of(std::size_t index, const LoadConfig& config) {
  if (!is_active(index, config.active_ratio)) return Role::kIdle;
  // Frac(index * golden ratio) fills [0, 1) evenly for any run of consecutive indices.
  constexpr double kGolden = 0.6180339887498949;
  const double u = std::fmod(static_cast<double>(index) * kGolden, 1.0);
  double edge = config.delay_share;
  if (u < edge) return Role::kDelay;
  edge += config.slow_share;
  if (u < edge) return Role::kSlowReader;
  edge += config.garbage_share;
  if (u < edge) return Role::kGarbage;
  return Role::kPing;
}

}  // namespace wheel::load
