// SPDX-License-Identifier: Apache-2.0
// Internal (wheel::jobs, RedisJobsHandler): the order of list-tubes on a fleet node. The store
// keeps the tubes that hold jobs (or a pause) with the sequence number of their creation
// (RedisStore::list_tubes gives them in that order); a tube this node's clients only use or
// watch exists here alone, and a client names a tube before it puts into it. RedisTubeOrder
// counts the names per client reference and remembers the order in which they were first
// named, so list-tubes reads: "default", the tubes this node's clients name, in the order they
// named them, then the fleet's other tubes in the order the fleet created them. On a single
// node that is the order of creation, as beanstalkd's. Loop thread only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace wheel::jobs {

class RedisTubeOrder {
 public:
  // A client uses or watches `tube` (once per reference).
  void name(const std::string& tube) {
    auto [it, added] = named_.try_emplace(tube, Named{next_, 0});
    if (added) ++next_;
    ++it->second.refs;
  }
  // A client stopped using or watching `tube` (once per reference): forgotten at the last.
  void unname(const std::string& tube) {
    auto it = named_.find(tube);
    if (it != named_.end() && --it->second.refs == 0) named_.erase(it);
  }
  // list-tubes: "default", the names held here in the order first named, then the rest of
  // `store` (the fleet's tubes in creation order).
  std::vector<std::string> merged(std::vector<std::string> store) const {
    std::vector<std::pair<std::uint64_t, const std::string*>> local;
    for (const auto& [tube, n] : named_) local.emplace_back(n.seq, &tube);
    std::sort(local.begin(), local.end());
    std::vector<std::string> out{"default"};
    std::unordered_set<std::string_view> seen{"default"};
    for (const auto& [seq, tube] : local) {
      if (seen.insert(*tube).second) out.push_back(*tube);
    }
    for (std::string& tube : store) {
      if (!seen.contains(tube)) out.push_back(std::move(tube));
    }
    return out;
  }

 private:
  struct Named {
    std::uint64_t seq;   // first named: the order among them
    std::uint64_t refs;  // client references (a use, a watch)
  };
  std::unordered_map<std::string, Named> named_;
  std::uint64_t next_ = 0;
};

}  // namespace wheel::jobs
