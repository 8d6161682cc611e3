// SPDX-License-Identifier: Apache-2.0
// UvLoop: a libuv loop owned by a benchmark phase. It is initialised on construction and, on
// destruction, closes every handle still open on it, runs it until their close callbacks ran
// and closes it: a phase may leave its timers open and still release the loop cleanly.
#pragma once

#include <uv.h>

namespace wheel::bench {

class UvLoop {
 public:
  // Initialises the loop; throws std::system_error naming uv_loop_init when libuv fails.
  UvLoop();
  // Closes every handle not already closing, runs the loop until nothing is left, closes it.
  // Loop thread only (the thread that runs it); handles must not be freed before this runs.
  ~UvLoop();
  UvLoop(const UvLoop&) = delete;
  UvLoop& operator=(const UvLoop&) = delete;

  uv_loop_t* get() { return &loop_; }

 private:
  uv_loop_t loop_{};
};

}  // namespace wheel::bench
