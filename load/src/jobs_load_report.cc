// SPDX-License-Identifier: Apache-2.0
#include "wheel/load/jobs_load_report.h"

#include "wheel/load/percentiles_json.h"

namespace wheel::load {

nlohmann::json jobs_load_json(const JobsLoadConfig& c, const JobsLoadResult& r) {
  nlohmann::json j{{"protocol", to_string(c.protocol)},
                   {"port", c.port},
                   {"connections", c.connections},
                   {"window", c.window},
                   {"body_size", c.body_size},
                   {"sent", r.sent},
                   {"acknowledged", r.acknowledged},
                   {"error_replies", r.error_replies},
                   {"elapsed_s", r.elapsed_s},
                   {"per_second", r.per_second},
                   {"reply_ms", percentiles_json(r.reply_ms)}};
  if (c.phase == JobsPhase::kLateness) {
    j["lateness_ms"] = percentiles_json(r.lateness_ms);
    j["probes_put"] = r.probes_put;
    j["probes_missing"] = r.probes_missing;
    j["others_reserved"] = r.others_reserved;
  }
  if (!r.first_error_reply.empty()) j["first_error_reply"] = r.first_error_reply;
  if (!r.error.empty()) j["error"] = r.error;
  return j;
}

}  // namespace wheel::load
