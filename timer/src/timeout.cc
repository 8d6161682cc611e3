// SPDX-License-Identifier: Apache-2.0
// The table of task types (TaskOps). Timeout's methods that reach its timer are defined with the
// timer's side of them, in timer_core.cc.
#include "wheel/timeout.h"

#include <array>
#include <mutex>
#include <stdexcept>

namespace wheel {

namespace detail {

namespace {
constexpr std::size_t kMaxTaskTypes = std::size_t{1} << 16;
// Written once per slot under the mutex, before the index is handed out; a node carries its
// index to other threads only through the timer's queues, which order the accesses.
std::array<const TaskOps*, kMaxTaskTypes> task_ops_table{};
std::size_t task_ops_count = 0;
std::mutex task_ops_mutex;
}  // namespace

std::uint16_t register_task_ops(const TaskOps* ops) {
  std::lock_guard lock(task_ops_mutex);
  if (task_ops_count == kMaxTaskTypes) {
    throw std::length_error("wheel: more than 65536 distinct task types");
  }
  task_ops_table[task_ops_count] = ops;
  return static_cast<std::uint16_t>(task_ops_count++);
}

const TaskOps& task_ops(std::uint16_t index) noexcept {
  return *task_ops_table[index];
}

}  // namespace detail
}  // namespace wheel
