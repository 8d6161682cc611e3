// SPDX-License-Identifier: Apache-2.0
#include "uv_runner.h"

#include <cmath>

#include "wheel/net/uv_error.h"

namespace wheel::bench {

namespace {

struct Phase {
  uv_timer_t stop;
  uv_timer_t tick;
  const std::function<void()>* every_ms;
};

}  // namespace

UvRunner::UvRunner() {
  net::check_uv(uv_check_init(loop_.get(), &check_), "uv_check_init");
  check_.data = this;
  net::check_uv(uv_check_start(&check_,
                               [](uv_check_t* c) {
                                 auto& n = static_cast<UvRunner*>(c->data)->iterations_;
                                 n.store(n.load(std::memory_order_relaxed) + 1,
                                         std::memory_order_relaxed);  // only the loop writes
                               }),
                "uv_check_start");
  uv_unref(reinterpret_cast<uv_handle_t*>(&check_));  // counts; does not keep the loop alive
}

void UvRunner::run_for(double secs, const std::function<void()>& every_ms) {
  Phase phase{};
  phase.every_ms = &every_ms;
  uv_update_time(loop_.get());
  net::check_uv(uv_timer_init(loop_.get(), &phase.stop), "uv_timer_init");
  phase.stop.data = &phase;
  net::check_uv(uv_timer_start(
                    &phase.stop, [](uv_timer_t* t) { uv_stop(t->loop); },
                    static_cast<std::uint64_t>(std::llround(secs * 1000)), 0),
                "uv_timer_start");
  net::check_uv(uv_timer_init(loop_.get(), &phase.tick), "uv_timer_init");
  phase.tick.data = &phase;
  if (every_ms) {
    net::check_uv(
        uv_timer_start(
            &phase.tick, [](uv_timer_t* t) { (*static_cast<Phase*>(t->data)->every_ms)(); }, 1, 1),
        "uv_timer_start");
  }
  uv_run(loop_.get(), UV_RUN_DEFAULT);
  uv_close(reinterpret_cast<uv_handle_t*>(&phase.stop), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&phase.tick), nullptr);
  uv_run(loop_.get(), UV_RUN_NOWAIT);  // the two closes complete; the handles are on this stack
}

void UvRunner::run_once_then_drain(const std::function<void()>& fn) {
  uv_update_time(loop_.get());
  fn();
  uv_run(loop_.get(), UV_RUN_NOWAIT);
}

}  // namespace wheel::bench
