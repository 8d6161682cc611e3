// SPDX-License-Identifier: Apache-2.0
#include "wheel/loop_wheel.h"

#include <algorithm>
#include <cassert>
#include <string>

#include "reentry_guard.h"
#include "wheel/rejected_execution_error.h"
#include "wheel_layout.h"
#include "wheel_shape.h"

namespace wheel {

namespace {

detail::WheelShape shape_of(const LoopWheelOptions& o) {
  return detail::validated_shape({o.tick_duration, o.ticks_per_wheel, o.layout});
}

}  // namespace

LoopWheel::LoopWheel(LoopWheelOptions options, Time now)
    : tick_(shape_of(options).tick_duration),
      max_pending_(options.max_pending_timeouts),
      origin_(now),
      now_(now) {
  const detail::WheelShape shape = shape_of(options);
  layout_ = detail::make_layout(shape.layout, shape.ticks_per_wheel, /*unshared=*/true);
}

LoopWheel::~LoopWheel() {
  clear();
}

std::size_t LoopWheel::ticks_per_wheel() const noexcept {
  return layout_->buckets();
}

LoopWheel::Handle LoopWheel::claim_slot() {
  if (max_pending_ > 0 && pending_ >= static_cast<std::size_t>(max_pending_)) {
    throw RejectedExecutionError("LoopWheel: " + std::to_string(pending_) +
                                 " pending timeouts reach max_pending_timeouts (" +
                                 std::to_string(max_pending_) + ")");
  }
  std::uint32_t index = free_head_;
  if (index == kNoSlot) {
    if (slots_.size() >= kNoSlot) throw std::length_error("LoopWheel: 2^32 - 1 timeouts pending");
    slots_.emplace_back();
    index = static_cast<std::uint32_t>(slots_.size() - 1);
  } else {
    free_head_ = slots_[index].next_free;
  }
  Slot& slot = slots_[index];
  if (++slot.generation == 0) slot.generation = 1;  // 0 means "empty handle"
  ++pending_;
  return Handle(index, slot.generation);
}

void LoopWheel::free_slot(std::uint32_t index) noexcept {
  Slot& slot = slots_[index];
  slot.node = nullptr;
  slot.next_free = free_head_;
  free_head_ = index;
  --pending_;
}

std::uint64_t LoopWheel::tick_of(Time t) const noexcept {
  if (t <= origin_) return 0;
  // t > origin_: the difference fits in 64 unsigned bits whatever their signs.
  const auto since =
      static_cast<std::uint64_t>(t.count()) - static_cast<std::uint64_t>(origin_.count());
  return since / static_cast<std::uint64_t>(tick_.count());
}

void LoopWheel::insert(Node* node, Time deadline) {
  slots_[node->index_].node = node;
  layout_->insert(node, tick_of(deadline), cursor_);
}

bool LoopWheel::is_pending(Handle handle) const noexcept {
  if (!handle || handle.index_ >= slots_.size()) return false;
  const Slot& slot = slots_[handle.index_];
  return slot.node != nullptr && slot.generation == handle.generation_;
}

bool LoopWheel::cancel(Handle handle) noexcept {
  if (!is_pending(handle)) return false;
  Node* node = slots_[handle.index_].node;
  if (node->state_.load(std::memory_order_relaxed) == Timeout::kInit) {
    layout_->unlink(node);
    discard(node);
  } else {
    // On the ready list (expired, not run): the run loop discards the node when it gets there.
    free_slot(handle.index_);
    node->state_.store(Timeout::kCancelled, std::memory_order_relaxed);
    node->destroy_task();
  }
  return true;
}

void LoopWheel::destroy(Node* node, bool task_alive) noexcept {
  if (task_alive) node->destroy_task();
  detail::task_ops(node->ops_).destroy_node(node);
}

void LoopWheel::discard(Node* node) noexcept {
  // Cancelled on the ready list: its slot was freed and its task destroyed by cancel().
  const bool cancelled = node->state_.load(std::memory_order_relaxed) == Timeout::kCancelled;
  if (!cancelled) free_slot(node->index_);
  destroy(node, !cancelled);
}

std::size_t LoopWheel::advance(Time now, std::size_t max_tasks) {
  const detail::ReentryGuard guard(advancing_, "LoopWheel::advance() cannot be called from a task");
  now_ = std::max(now_, now);
  std::size_t ran = run_ready(max_tasks);
  if (ready_head_ != nullptr) return ran;  // the budget is spent
  // Tick t has fully passed once origin + (t + 1) * tick <= now: every t below due_end.
  const std::uint64_t due_end = tick_of(now_);
  // Empty ticks are skipped; with nothing due before due_end the cursor jumps there.
  while (cursor_ < due_end && layout_->skip_to_next_event(cursor_, due_end)) {
    // The ready list is empty here (a budget cut returns above or breaks below): the due list
    // becomes it as it is.
    assert(ready_head_ == nullptr);
    ready_head_ = layout_->collect_due(cursor_);
    ++cursor_;  // what tasks schedule now lands on a tick still to come
    ran += run_ready(max_tasks - ran);
    if (ready_head_ != nullptr) break;
  }
  return ran;
}

std::size_t LoopWheel::run_ready(std::size_t max_tasks) {
  std::size_t ran = 0;
  while (ready_head_ != nullptr && ran < max_tasks) {
    auto* node = static_cast<Node*>(ready_head_);
    ready_head_ = node->queue_next_;
    node->queue_next_ = nullptr;
    if (node->state_.load(std::memory_order_relaxed) == Timeout::kCancelled) {
      discard(node);
      continue;
    }
    // From here its handle names nothing: a cancel() from its own task returns false.
    free_slot(node->index_);
    ++ran;
    node->invoke_guarded();
    destroy(node, true);
  }
  return ran;
}

std::optional<LoopWheel::Time> LoopWheel::next_due() const {
  if (ready_head_ != nullptr) return now_;
  const auto distance = layout_->ticks_to_next_event(cursor_);
  if (!distance) return std::nullopt;
  // The end of tick cursor_ + distance: origin + (cursor_ + distance + 1) * tick, saturated.
  const auto tick = static_cast<std::uint64_t>(tick_.count());
  const std::uint64_t ticks = cursor_ + *distance + 1;
  const auto origin = static_cast<std::uint64_t>(origin_.count());  // modulo 2^64 from here
  const std::uint64_t room = static_cast<std::uint64_t>(Time::max().count()) - origin;
  if (ticks > room / tick) return Time::max();
  return Time(static_cast<std::int64_t>(origin + ticks * tick));
}

void LoopWheel::clear() {
  layout_->drain([this](Timeout* timeout) { discard(static_cast<Node*>(timeout)); });
  while (ready_head_ != nullptr) {
    auto* node = static_cast<Node*>(ready_head_);
    ready_head_ = node->queue_next_;
    discard(node);
  }
}

}  // namespace wheel
