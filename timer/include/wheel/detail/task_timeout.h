// SPDX-License-Identifier: Apache-2.0
// Internal: the concrete Timeout node that stores a task of type F inline, and the base of
// periodic nodes.
#pragma once

#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#include "wheel/detail/node_pool.h"
#include "wheel/timeout.h"

namespace wheel {
class TimerJob;
}  // namespace wheel

namespace wheel::detail {

template <class F>
concept TimerTask = std::is_invocable_v<F&, Timeout&> || std::is_invocable_v<F&>;

template <class F>
void invoke_task(F& task, Timeout& timeout) {
  if constexpr (std::is_invocable_v<F&, Timeout&>) {
    task(timeout);
  } else {
    task();
  }
}

// Node memory: the process-wide pool for the usual alignment, ::operator new beyond it. The
// node is deleted as its real type (TaskOps::destroy_node), so operator delete gets its size.
template <class Node>
void* allocate_node_of(std::size_t size) {
  if constexpr (alignof(Node) <= 8) {
    return allocate_node(size);
  } else {
    return ::operator new (size, std::align_val_t{alignof(Node)});
  }
}
template <class Node>
void deallocate_node_of(void* p, [[maybe_unused]] std::size_t size) noexcept {
  if constexpr (alignof(Node) <= 8) {
    deallocate_node(p, size);
  } else {
    ::operator delete (p, std::align_val_t{alignof(Node)});
  }
}

// Where a node keeps its task. A union lets the task be destroyed before the node (see the
// ownership model in timeout.h); a stateless task (a capture-less lambda) takes no room at all.
template <class F>
struct TaskStorage {
  template <class Arg>
  explicit TaskStorage(Arg&& task) {
    ::new (static_cast<void*>(std::addressof(task_))) F(std::forward<Arg>(task));
  }
  ~TaskStorage() {}  // the task was destroyed through destroy()
  F& get() { return task_; }
  void destroy() noexcept { task_.~F(); }
  union {
    F task_;
  };
};
template <class F>
requires(std::is_empty_v<F>&& std::is_trivially_destructible_v<F>) struct TaskStorage<F> {
  template <class Arg>
  explicit TaskStorage(Arg&& task) : task_(std::forward<Arg>(task)) {}
  F& get() { return task_; }
  void destroy() noexcept {}
  [[no_unique_address]] F task_;
};

// Shared by the timer and its periodic nodes, so that a periodic job run by an executor can
// re-arm its timeout without touching a timer that has stopped or is gone (periodic_gate.h).
struct PeriodicGate;

// What a periodic node adds to a Timeout: its period and the deadline of its next run, in
// nanoseconds since the timer's start. Only periodic timeouts pay for these fields.
class PeriodicTimeout : public Timeout {
 protected:
  PeriodicTimeout(TimerCore* core, std::uint16_t ops, std::int64_t period_ns,
                  std::shared_ptr<PeriodicGate> gate)
      : Timeout(core, ops), period_ns_(period_ns), gate_(std::move(gate)) {}
  ~PeriodicTimeout() = default;

 private:
  friend class TimerCore;
  friend class wheel::TimerJob;   // reaches gate_ when its job returns from the executor
  const std::int64_t period_ns_;  // > 0
  std::int64_t deadline_ns_ = 0;  // of the run due next (or running); worker or job thread
  const std::shared_ptr<PeriodicGate> gate_;
};

// The node: Base's fields (Timeout or PeriodicTimeout) followed by the task.
template <class F, class Base = Timeout>
class TaskTimeout final : public Base {
 public:
  template <class Arg, class... BaseArgs>
  explicit TaskTimeout(TimerCore* core, Arg&& task, BaseArgs&&... base_args)
      : Base(core, ops_index(), std::forward<BaseArgs>(base_args)...),
        task_(std::forward<Arg>(task)) {}

  static void* operator new(std::size_t size) { return allocate_node_of<TaskTimeout>(size); }
  static void operator delete(void* p, std::size_t size) noexcept {
    deallocate_node_of<TaskTimeout>(p, size);
  }

 private:
  static void invoke_fn(Timeout& node) {
    invoke_task(static_cast<TaskTimeout&>(node).task_.get(), node);
  }
  static void destroy_task_fn(Timeout& node) noexcept {
    static_cast<TaskTimeout&>(node).task_.destroy();
  }
  static void destroy_node_fn(Timeout* node) noexcept { delete static_cast<TaskTimeout*>(node); }
  static std::uint16_t ops_index() {
    static constexpr TaskOps kOps{&invoke_fn, &destroy_task_fn, &destroy_node_fn,
                                  std::is_base_of_v<PeriodicTimeout, Base>};
    static const std::uint16_t index = register_task_ops(&kOps);
    return index;
  }

  [[no_unique_address]] TaskStorage<F> task_;
};

}  // namespace wheel::detail
