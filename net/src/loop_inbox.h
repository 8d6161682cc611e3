// SPDX-License-Identifier: Apache-2.0
// Internal: the libuv side of a LoopTimer. It owns the timer's handles — the uv timer that sleeps
// until the wheel's next due tick; a check handle that continues a turn cut short by the budget
// right after the loop has polled for I/O, with an idle handle active meanwhile so that the poll
// does not block (a zero uv timer would not do: libuv 1.44 runs a timer re-started from its own
// callback again in the same pass, and an idle callback runs before the poll); and the async
// handle that wakes the loop for requests posted from other threads — and the queue of those
// requests.
//
// It lives on the heap and frees itself once its handles have closed, so the LoopTimer may be
// destroyed right after close().
#pragma once

#include <uv.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "wheel/loop_wheel.h"
#include "wheel/net/detail/posted_task.h"

namespace wheel::net {

class LoopInbox {
 public:
  // What the inbox calls on its owner (the LoopTimer), on the loop thread: a turn when a handle
  // fires, and each posted request in take_all() (a null task is a cancellation).
  struct Owner {
    void* self;
    void (*turn)(void* self);
    void (*take)(void* self, std::uint64_t id, std::unique_ptr<detail::PostedTask> task,
                 LoopWheel::Time deadline);
  };

  // Creates the inbox and its handles on `loop`. Throws std::system_error when libuv refuses a
  // handle. Loop thread only.
  static LoopInbox* create(uv_loop_t* loop, Owner owner);

  LoopInbox(const LoopInbox&) = delete;
  LoopInbox& operator=(const LoopInbox&) = delete;

  // Calls the owner's turn() in `ms` milliseconds of loop time (replacing any earlier call), or
  // never (stop_timer). Loop thread only.
  void start_timer(std::uint64_t ms);
  void stop_timer() { uv_timer_stop(&timer_); }
  // Runs a turn once the loop has polled for I/O (without blocking). Loop thread only.
  void continue_soon();

  // Queues a schedule (task non-null) or a cancellation (task null) of posted timeout `id` and
  // wakes the loop. False when closed (nothing queued; the caller destroys the task).
  // Safe from any thread.
  bool post(std::uint64_t id, std::unique_ptr<detail::PostedTask> task, LoopWheel::Time deadline);

  // Hands every queued request to the owner (Owner::take), oldest first.
  // Loop thread only.
  void take_all();

  // Destroys the queued requests (their tasks unrun, here), refuses later posts and closes the
  // handles; the last close callback frees the inbox. Loop thread only.
  void close();

 private:
  struct Request {
    std::uint64_t id;
    std::unique_ptr<detail::PostedTask> task;
    LoopWheel::Time deadline;
  };

  explicit LoopInbox(Owner owner) : owner_(owner) {}
  void turn() {
    if (open_) owner_.turn(owner_.self);
  }
  ~LoopInbox() = default;
  static void on_closed(uv_handle_t* handle);

  Owner owner_;
  bool open_ = true;  // false once closed: nothing calls the owner any more
  uv_timer_t timer_;
  uv_idle_t idle_;
  uv_check_t check_;
  uv_async_t async_;
  int open_handles_ = 0;
  std::mutex mutex_;
  std::vector<Request> queue_;   // guarded by mutex_
  bool closed_ = false;          // guarded by mutex_
  std::vector<Request> taking_;  // loop thread only: the batch being applied
};

}  // namespace wheel::net
