// SPDX-License-Identifier: Apache-2.0
#include "uv_runner.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace wheel::bench {

namespace {

void check(int rc, const char* what) {
  if (rc != 0) throw std::runtime_error(std::string(what) + ": " + uv_err_name(rc));
}

struct Phase {
  uv_timer_t stop;
  uv_timer_t tick;
  const std::function<void()>* every_ms;
};

}  // namespace

UvRunner::UvRunner() {
  check(uv_loop_init(&loop_), "uv_loop_init");
}

UvRunner::~UvRunner() {
  uv_walk(
      &loop_,
      [](uv_handle_t* h, void*) {
        if (!uv_is_closing(h)) uv_close(h, nullptr);
      },
      nullptr);
  uv_run(&loop_, UV_RUN_DEFAULT);
  uv_loop_close(&loop_);
}

void UvRunner::run_for(double secs, const std::function<void()>& every_ms) {
  Phase phase{};
  phase.every_ms = &every_ms;
  uv_update_time(&loop_);
  check(uv_timer_init(&loop_, &phase.stop), "uv_timer_init");
  phase.stop.data = &phase;
  check(uv_timer_start(
            &phase.stop, [](uv_timer_t* t) { uv_stop(t->loop); },
            static_cast<std::uint64_t>(std::llround(secs * 1000)), 0),
        "uv_timer_start");
  check(uv_timer_init(&loop_, &phase.tick), "uv_timer_init");
  phase.tick.data = &phase;
  if (every_ms) {
    check(
        uv_timer_start(
            &phase.tick, [](uv_timer_t* t) { (*static_cast<Phase*>(t->data)->every_ms)(); }, 1, 1),
        "uv_timer_start");
  }
  uv_run(&loop_, UV_RUN_DEFAULT);
  uv_close(reinterpret_cast<uv_handle_t*>(&phase.stop), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&phase.tick), nullptr);
  uv_run(&loop_, UV_RUN_NOWAIT);  // the two closes complete; the handles are on this stack
}

void UvRunner::run_once_then_drain(const std::function<void()>& fn) {
  uv_update_time(&loop_);
  fn();
  uv_run(&loop_, UV_RUN_NOWAIT);
}

}  // namespace wheel::bench
