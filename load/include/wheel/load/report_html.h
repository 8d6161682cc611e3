// SPDX-License-Identifier: Apache-2.0
// wheel-load's HTML report (--html): one self-contained page, like k6's HTML report: the
// verdict, the figures of the text summary, histograms of idle-close lateness and PING round
// trips, and the connections open over time. The charts are inline SVG written here (no script,
// no CDN, nothing fetched): the file opens offline and in any browser.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "wheel/load/load_result.h"
#include "wheel/load/progress.h"

namespace wheel::load {

// The run's progress figures over time, for the connections chart, bounded: past `max_points`
// every other point is dropped (and from then on only every second one kept, and so on), so a
// run of any length keeps at most `max_points` evenly spread points. Not thread-safe: one
// owner (the progress callback's thread).
class ProgressTimeline {
 public:
  explicit ProgressTimeline(std::size_t max_points = 1024);
  void add(const Progress& p);
  const std::vector<Progress>& points() const { return points_; }

 private:
  std::size_t max_points_;
  std::size_t stride_ = 1;  // keep every stride_-th point offered
  std::size_t offered_ = 0;
  std::vector<Progress> points_;
};

// `text` with &, <, >, " and ' replaced by their character references: safe as element text
// and inside a quoted attribute.
std::string html_escape(std::string_view text);

// The page: `report` (make_report's JSON, with its failures), `summary` (format_summary's text,
// shown verbatim), the samples of `result` as histograms, and `timeline`. Every text from the
// run (failure sentences, hosts, error kinds) is escaped.
std::string format_html_report(const nlohmann::json& report, const std::string& summary,
                               const LoadResult& result, const std::vector<Progress>& timeline);

}  // namespace wheel::load
