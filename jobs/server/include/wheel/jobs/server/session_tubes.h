// SPDX-License-Identifier: Apache-2.0
// SessionTubes: one beanstalkd connection's tubes, kept by the front end (BeanstalkFront) for
// both backends: the tube it uses (put, peek-*, kick go there; "default" at first) and the
// tubes it watches (reserve takes from them; "default" at first, never empty). It runs the
// session's requests with beanstalkd's rules, once for both backends:
//   use T:    T becomes the used tube. USING T.
//   watch T:  T already watched -> nothing changes; max_watched tubes watched -> OUT_OF_MEMORY;
//             else T is added at the end. WATCHING <tubes watched>.
//   ignore T: T not watched -> nothing changes; T the only tube watched -> NOT_IGNORED; else T
//             is removed. WATCHING <tubes watched>.
//   list-tube-used, list-tubes-watched: the tubes, watched ones in the order watched.
// (A bad tube name never gets here: the parser answers BAD_FORMAT.) Before a use, watch or
// ignore changes anything, the backend hears it (BeanstalkBackend::change_tubes) and may
// refuse a tube it has no room for (the in-process queue beyond its max_tubes): the request
// then answers OUT_OF_MEMORY and nothing changes.
//
// Threads: as the front (loop thread only).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "wheel/jobs/beanstalk/beanstalk_request.h"

namespace wheel::jobs {

// How a session's tubes change (BeanstalkBackend::change_tubes).
enum class TubeChange : std::uint8_t {
  kUse,     // the tube becomes the used one (it was not)
  kWatch,   // the tube is added to the watched ones (it was not there)
  kIgnore,  // the tube leaves the watched ones (another one stays)
};

class SessionTubes {
 public:
  // Says whether a change may go through: false when there is no room for the tube.
  using Accept = std::function<bool(TubeChange change, std::string_view tube)>;

  // Watches at most `max_watched` tubes (REQUIRES >= 1); uses and watches "default".
  explicit SessionTubes(std::size_t max_watched);

  const std::string& used() const { return used_; }
  // In the order watched; never empty.
  const std::vector<std::string>& watched() const { return watched_; }
  bool watches(std::string_view tube) const;

  // True for the requests run here: use, watch, ignore, list-tube-used, list-tubes-watched.
  static bool runs(const beanstalk::Request& request);
  // Runs such a request (REQUIRES: runs(request)) by the rules above and appends its reply to
  // `out`; `accept` hears a change before it is made (not when nothing changes).
  void run(const beanstalk::Request& request, const Accept& accept, std::string& out);

 private:
  std::size_t max_watched_;
  std::string used_;
  std::vector<std::string> watched_;
};

}  // namespace wheel::jobs
