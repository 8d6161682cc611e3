// SPDX-License-Identifier: Apache-2.0
// Test support: list-tubes keeps the order in which the tubes were created, as beanstalkd 1.12
// lists them (checked side by side with Debian's beanstalkd, which differs only after a drop:
// it moves its last tube into the dropped one's place; we keep the others' order). Runs the
// same steps on any server speaking the protocol at `port` and returns each list-tubes' YAML
// list as one line ("default zeta alpha mid beta").
#pragma once

#include <string>
#include <vector>

#include "beanstalk_session.h"

namespace wheel_test {

inline std::string tube_list_line(BeanstalkSession& s) {
  std::string yaml, line;
  s.call("list-tubes", nullptr, &yaml);
  for (std::size_t at = yaml.find("- "); at != std::string::npos; at = yaml.find("- ", at)) {
    const std::size_t end = yaml.find('\n', at);
    line += (line.empty() ? "" : " ") + yaml.substr(at + 2, end - at - 2);
    at = end;
  }
  return line;
}

// Tubes named in the order zeta, alpha, mid, beta (by watch, so with no job); alpha dropped,
// then named again (last now); then a tube made by a put, after them.
inline std::vector<std::string> tube_order_steps(int port) {
  BeanstalkSession a(port), b(port);
  std::vector<std::string> lists;
  for (const char* tube : {"zeta", "alpha", "mid", "beta"}) a.call(std::string("watch ") + tube);
  lists.push_back(tube_list_line(b));
  a.call("ignore alpha");
  lists.push_back(tube_list_line(b));
  a.call("watch alpha");
  b.call("use aaa");
  b.put(0, "0", "60", "x");
  lists.push_back(tube_list_line(b));
  return lists;
}

inline const std::vector<std::string> kTubeOrderLists{
    "default zeta alpha mid beta", "default zeta mid beta", "default zeta mid beta alpha aaa"};

}  // namespace wheel_test
