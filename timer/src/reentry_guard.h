// SPDX-License-Identifier: Apache-2.0
// Internal. ReentryGuard: refuses a call that re-enters itself (a task calling advance() from
// inside the advance() that runs it), and clears the busy flag however the call ends.
#pragma once

#include <stdexcept>

namespace wheel::detail {

class ReentryGuard {
 public:
  // Throws std::logic_error(`what`) if `busy` is already set; otherwise sets it until the guard
  // goes out of scope. `busy` must outlive the guard.
  ReentryGuard(bool& busy, const char* what) : busy_(busy) {
    if (busy_) throw std::logic_error(what);
    busy_ = true;
  }
  ~ReentryGuard() { busy_ = false; }
  ReentryGuard(const ReentryGuard&) = delete;
  ReentryGuard& operator=(const ReentryGuard&) = delete;

 private:
  bool& busy_;
};

}  // namespace wheel::detail
