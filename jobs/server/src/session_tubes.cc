// SPDX-License-Identifier: Apache-2.0
#include "wheel/jobs/server/session_tubes.h"

#include <algorithm>
#include <variant>

#include "wheel/jobs/beanstalk/beanstalk_reply.h"
#include "wheel/jobs/beanstalk/beanstalk_stats.h"
#include "wheel/jobs/model/job_queue.h"
#include "wheel/overloaded.h"

namespace wheel::jobs {

namespace bs = beanstalk;

SessionTubes::SessionTubes(std::size_t max_watched)
    : max_watched_(max_watched), used_(kDefaultTube), watched_{std::string(kDefaultTube)} {}

bool SessionTubes::watches(std::string_view tube) const {
  return std::find(watched_.begin(), watched_.end(), tube) != watched_.end();
}

bool SessionTubes::runs(const bs::Request& request) {
  return std::holds_alternative<bs::Use>(request) || std::holds_alternative<bs::Watch>(request) ||
         std::holds_alternative<bs::Ignore>(request) ||
         std::holds_alternative<bs::ListTubeUsed>(request) ||
         std::holds_alternative<bs::ListTubesWatched>(request);
}

void SessionTubes::run(const bs::Request& request, const Accept& accept, std::string& out) {
  auto out_of_memory = [&] { bs::append_reply(out, bs::Reply::kOutOfMemory); };
  std::visit(
      Overloaded{
          [&](const bs::Use& use) {
            if (use.tube != used_) {
              if (!accept(TubeChange::kUse, use.tube)) return out_of_memory();
              used_ = use.tube;
            }
            bs::append_using(out, used_);
          },
          [&](const bs::Watch& watch) {
            if (!watches(watch.tube)) {
              if (watched_.size() >= max_watched_) return out_of_memory();
              if (!accept(TubeChange::kWatch, watch.tube)) return out_of_memory();
              watched_.push_back(watch.tube);
            }
            bs::append_watching(out, watched_.size());
          },
          [&](const bs::Ignore& ignore) {
            const auto it = std::find(watched_.begin(), watched_.end(), ignore.tube);
            if (it != watched_.end()) {
              if (watched_.size() == 1) return bs::append_reply(out, bs::Reply::kNotIgnored);
              accept(TubeChange::kIgnore, ignore.tube);
              watched_.erase(it);
            }
            bs::append_watching(out, watched_.size());
          },
          [&](const bs::ListTubeUsed&) { bs::append_using(out, used_); },
          [&](const bs::ListTubesWatched&) {
            const std::vector<std::string_view> names(watched_.begin(), watched_.end());
            bs::append_ok(out, bs::tube_list_yaml(names));
          },
          [&](const auto&) { bs::append_reply(out, bs::Reply::kInternalError); },  // not ours
      },
      request);
}

}  // namespace wheel::jobs
