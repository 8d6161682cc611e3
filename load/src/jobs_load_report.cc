// SPDX-License-Identifier: Apache-2.0
#include "wheel/load/jobs_load_report.h"

#include "wheel/load/percentiles_json.h"

namespace wheel::load {

// The settings and counts whose key is their field's name, written once each by the macro
// (it also defines the reverse, from_json, which nothing here uses).
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(JobsLoadConfig, port, connections, window, body_size)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(JobsLoadResult, sent, acknowledged, error_replies, elapsed_s,
                                   per_second)

nlohmann::json jobs_load_json(const JobsLoadConfig& c, const JobsLoadResult& r) {
  nlohmann::json j = c;
  j.update(r);
  j["protocol"] = to_string(c.protocol);
  j["reply_ms"] = percentiles_json(r.reply_ms);
  if (c.phase == JobsPhase::kLateness) {
    j.update({{"lateness_ms", percentiles_json(r.lateness_ms)},
              {"probes_put", r.probes_put},
              {"probes_missing", r.probes_missing},
              {"others_reserved", r.others_reserved}});
  }
  if (c.phase == JobsPhase::kDrain) j.update({{"reserved", r.reserved}, {"drained", r.drained}});
  if (!r.first_error_reply.empty()) j["first_error_reply"] = r.first_error_reply;
  if (!r.error.empty()) j["error"] = r.error;
  return j;
}

}  // namespace wheel::load
