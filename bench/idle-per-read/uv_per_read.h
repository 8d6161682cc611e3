// SPDX-License-Identifier: Apache-2.0
// What wheel-idle-bench's implementations on a libuv loop (wheel, libuv) share: the loop that
// runs them (UvRunner) and the count of deadlines that passed. Loop thread only, as PerReadImpl.
#pragma once

#include <cstdint>
#include <functional>

#include "per_read_driver.h"
#include "uv_runner.h"

namespace wheel::bench {

class UvPerReadImpl : public PerReadImpl {
 public:
  void run_for(double secs, const std::function<void()>& every_ms) override {
    runner_.run_for(secs, every_ms);
  }
  void run_once_then_drain(const std::function<void()>& fn) override {
    runner_.run_once_then_drain(fn);
  }
  std::uint64_t idle_events() const override { return idle_events_; }
  std::int64_t loop_iterations() const override { return runner_.iterations(); }

 protected:
  // Made before and destroyed after the derived class's handles, which live on its loop.
  UvRunner runner_;
  // The derived class adds one for each deadline that passed without a read.
  std::uint64_t idle_events_ = 0;
};

}  // namespace wheel::bench
