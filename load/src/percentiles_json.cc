// SPDX-License-Identifier: Apache-2.0
#include "wheel/load/percentiles_json.h"

#include <cmath>

namespace wheel::load {

nlohmann::json percentiles_json(const std::optional<PercentileSummary>& s) {
  if (!s) {
    return {{"p50", nullptr}, {"p90", nullptr}, {"p99", nullptr},
            {"max", nullptr}, {"min", nullptr}, {"count", 0}};
  }
  const auto r = [](double v) { return std::round(v * 1000.0) / 1000.0; };
  return {{"p50", r(s->p50)}, {"p90", r(s->p90)}, {"p99", r(s->p99)},
          {"max", r(s->max)}, {"min", r(s->min)}, {"count", s->count}};
}

}  // namespace wheel::load
