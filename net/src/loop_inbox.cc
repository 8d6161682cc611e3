// SPDX-License-Identifier: Apache-2.0
#include "loop_inbox.h"

#include "wheel/net/uv_error.h"

namespace wheel::net {

LoopInbox* LoopInbox::create(uv_loop_t* loop, Owner owner) {
  auto* self = new LoopInbox(owner);
  // Each handle, once initialised, must be closed (not deleted): a failure closes what exists.
  try {
    check_uv(uv_timer_init(loop, &self->timer_), "uv_timer_init");
    self->timer_.data = self;
    ++self->open_handles_;
    check_uv(uv_idle_init(loop, &self->idle_), "uv_idle_init");
    self->idle_.data = self;
    ++self->open_handles_;
    check_uv(uv_check_init(loop, &self->check_), "uv_check_init");
    self->check_.data = self;
    ++self->open_handles_;
    check_uv(uv_async_init(loop, &self->async_,
                           [](uv_async_t* a) { static_cast<LoopInbox*>(a->data)->turn(); }),
             "uv_async_init");
    self->async_.data = self;
    ++self->open_handles_;
  } catch (...) {
    self->close();
    throw;
  }
  return self;
}

void LoopInbox::start_timer(std::uint64_t ms) {
  uv_timer_start(
      &timer_, [](uv_timer_t* timer) { static_cast<LoopInbox*>(timer->data)->turn(); }, ms, 0);
}

void LoopInbox::continue_soon() {
  // The active idle handle keeps the poll from blocking; the check handle runs after it.
  uv_idle_start(&idle_, [](uv_idle_t*) {});
  uv_check_start(&check_, [](uv_check_t* check) {
    auto* inbox = static_cast<LoopInbox*>(check->data);
    uv_check_stop(check);
    uv_idle_stop(&inbox->idle_);
    inbox->turn();
  });
}

bool LoopInbox::post(std::uint64_t id, std::unique_ptr<detail::PostedTask> task,
                     LoopWheel::Time deadline) {
  std::lock_guard lock(mutex_);
  if (closed_) return false;
  queue_.push_back(Request{id, std::move(task), deadline});
  // Under the lock, so that close() cannot free the handle between the check and the send.
  uv_async_send(&async_);
  return true;
}

void LoopInbox::take_all() {
  {
    std::lock_guard lock(mutex_);
    taking_.swap(queue_);
  }
  for (Request& r : taking_) owner_.take(owner_.self, r.id, std::move(r.task), r.deadline);
  taking_.clear();
}

void LoopInbox::close() {
  std::vector<Request> dropped;
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
    dropped.swap(queue_);
  }
  dropped.clear();  // destroys the tasks unrun, here on the loop thread
  open_ = false;
  const int open = open_handles_;
  if (open == 0) {
    delete this;
    return;
  }
  uv_handle_t* handles[] = {
      reinterpret_cast<uv_handle_t*>(&timer_), reinterpret_cast<uv_handle_t*>(&idle_),
      reinterpret_cast<uv_handle_t*>(&check_), reinterpret_cast<uv_handle_t*>(&async_)};
  for (int i = 0; i < open; ++i) uv_close(handles[i], &LoopInbox::on_closed);
}

void LoopInbox::on_closed(uv_handle_t* handle) {
  auto* self = static_cast<LoopInbox*>(handle->data);
  if (--self->open_handles_ == 0) delete self;
}

}  // namespace wheel::net
