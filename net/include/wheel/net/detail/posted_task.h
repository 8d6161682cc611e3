// SPDX-License-Identifier: Apache-2.0
// Internal: a task posted to a LoopTimer from another thread, type-erased (move-only tasks
// allowed) until the loop takes it in.
#pragma once

namespace wheel::net::detail {

struct PostedTask {
  virtual ~PostedTask() = default;
  virtual void run() = 0;
};

}  // namespace wheel::net::detail
