// SPDX-License-Identifier: Apache-2.0
#include "wheel/net/loop_timer.h"

#include <string>

#include "loop_inbox.h"

namespace wheel::net {

namespace {

LoopWheelOptions wheel_options(const TimerOptions& o) {
  LoopWheelOptions w;
  w.tick_duration = o.tick_duration;
  w.ticks_per_wheel = o.ticks_per_wheel;
  w.layout = o.layout;
  w.max_pending_timeouts = o.max_pending_timeouts;
  return w;
}

std::size_t checked_budget(std::size_t n) {
  if (n == 0) throw std::invalid_argument("max_tasks_per_turn must be at least 1, got 0");
  return n;
}

}  // namespace

LoopWheel::Time LoopTimer::now() const {
  if (manual_ != nullptr) return manual_->now();
  return std::chrono::duration_cast<LoopWheel::Time>(
      std::chrono::steady_clock::now().time_since_epoch());
}

LoopTimer::LoopTimer(uv_loop_t* loop, TimerOptions options, LoopTimerOptions loop_options)
    : LoopTimer(loop, nullptr, std::move(options), loop_options) {}

LoopTimer::LoopTimer(uv_loop_t* loop, ManualClock& clock, TimerOptions options,
                     LoopTimerOptions loop_options)
    : LoopTimer(loop, &clock, std::move(options), loop_options) {}

LoopTimer::LoopTimer(uv_loop_t* loop, ManualClock* clock, TimerOptions options,
                     LoopTimerOptions loop_options)
    : loop_(loop),
      manual_(clock),
      max_tasks_per_turn_(checked_budget(loop_options.max_tasks_per_turn)),
      tick_observer_(std::move(options.tick_observer)),
      wheel_(wheel_options(options), now()),
      inbox_(LoopInbox::create(
          loop, {this, [](void* self) { static_cast<LoopTimer*>(self)->turn(); },
                 [](void* self, std::uint64_t id, std::unique_ptr<detail::PostedTask> task,
                    LoopWheel::Time deadline) {
                   static_cast<LoopTimer*>(self)->take_posted(id, std::move(task), deadline);
                 }})) {
  if (manual_ != nullptr) manual_->attach(this);  // its advance() stands in for the uv timer
}

LoopTimer::~LoopTimer() {
  close();
}

void LoopTimer::check_open(const char* what) const {
  if (closed_) throw std::logic_error(std::string("LoopTimer::") + what + ": the timer is closed");
}

LoopTimer::PostedTimeout LoopTimer::post(std::unique_ptr<detail::PostedTask> task,
                                         LoopWheel::Time deadline) {
  const std::uint64_t id = next_posted_id_.fetch_add(1, std::memory_order_relaxed);
  if (!inbox_->post(id, std::move(task), deadline)) return {};  // closed: `task` dies here
  return PostedTimeout{id};
}

void LoopTimer::cancel_posted(PostedTimeout timeout) {
  if (!timeout) return;
  inbox_->post(timeout.id, nullptr, LoopWheel::Time::zero());
}

void LoopTimer::take_posted(std::uint64_t id, std::unique_ptr<detail::PostedTask> task,
                            LoopWheel::Time deadline) {
  if (!task) {  // a cancellation
    if (const auto it = posted_.find(id); it != posted_.end()) {
      wheel_.cancel(it->second);
      posted_.erase(it);
    }
    return;
  }
  // The task forgets its id before it runs, so a cancellation arriving later finds nothing.
  const Handle handle = wheel_.schedule_at(
      [this, id, task = std::move(task)] {
        posted_.erase(id);
        task->run();
      },
      deadline);
  posted_.emplace(id, handle);
  ++scheduled_;
}

void LoopTimer::turn() {
  if (closed_) return;
  in_turn_ = true;
  struct Done {
    bool* flag;
    ~Done() { *flag = false; }
  } done{&in_turn_};
  inbox_->take_all();
  const LoopWheel::Time t = now();
  if (tick_observer_ && armed_for_ && *armed_for_ <= t) tick_observer_(t - *armed_for_);
  if (turn_hooks_.before) turn_hooks_.before();
  const std::size_t ran = wheel_.advance(t, max_tasks_per_turn_);
  if (turn_hooks_.after) turn_hooks_.after();
  in_turn_ = false;
  if (ran == max_tasks_per_turn_ && wheel_.next_due() == wheel_.now()) ++budget_cuts_;
  arm();
}

void LoopTimer::arm() {
  if (closed_) return;
  const std::optional<LoopWheel::Time> due = wheel_.next_due();
  if (!due) {
    inbox_->stop_timer();
    armed_for_.reset();
    return;
  }
  if (*due <= wheel_.now()) {  // over budget: the rest after the loop has polled for I/O
    inbox_->stop_timer();
    armed_for_ = due;
    inbox_->continue_soon();
    return;
  }
  armed_for_ = due;
  if (manual_ != nullptr) return;  // ManualClock::advance() runs the turn
  const LoopWheel::Time t = now();
  std::uint64_t ms = 0;
  if (*due > t) {
    // Rounded up: a wake-up before the tick has ended would find nothing to do.
    const std::int64_t ns = (*due - t).count();
    ms = static_cast<std::uint64_t>(ns / 1'000'000 + (ns % 1'000'000 != 0));
  }
  inbox_->start_timer(ms);
}

void LoopTimer::close() {
  if (closed_) return;
  closed_ = true;
  if (manual_ != nullptr) manual_->detach(this);
  armed_for_.reset();
  inbox_->close();  // drops the posted requests unrun, closes the handles
  posted_.clear();
  wheel_.clear();  // destroys every pending task unrun, here
}

}  // namespace wheel::net
