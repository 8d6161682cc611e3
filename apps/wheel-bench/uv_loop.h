// SPDX-License-Identifier: Apache-2.0
// UvLoop: a libuv loop owned by a benchmark phase. It is initialised on construction and, when
// the UvLoop goes, every handle still open on it is closed, the loop runs until their close
// callbacks ran and is closed: a phase may leave its timers open and still release the loop
// cleanly. The loop lives on the heap, so a UvLoop may move; it cannot be copied.
#pragma once

#include <uv.h>

#include <memory>

namespace wheel::bench {

class UvLoop {
 public:
  // Initialises the loop; throws std::system_error naming uv_loop_init when libuv fails.
  UvLoop();

  // The loop; null only in a UvLoop moved from.
  uv_loop_t* get() { return loop_.get(); }

 private:
  // Closes every handle not already closing, runs the loop until nothing is left, closes it.
  // Loop thread only (the thread that runs it); handles must not be freed before this runs.
  struct CloseLoop {
    void operator()(uv_loop_t* loop) const;
  };
  std::unique_ptr<uv_loop_t, CloseLoop> loop_;
};

}  // namespace wheel::bench
