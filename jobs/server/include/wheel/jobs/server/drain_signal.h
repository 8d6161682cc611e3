// SPDX-License-Identifier: Apache-2.0
// Internal to wheel::jobs: the SIGUSR1 watcher the beanstalkd front end (BeanstalkFront, over
// either backend) starts for drain mode.
#pragma once

#include <uv.h>

#include <csignal>

namespace wheel::jobs {

// A new SIGUSR1 watcher on `loop` whose every signal calls kDrain(owner) (a captureless
// callable taking void*). The handle is the caller's: close it with uv_close and delete it as a
// uv_signal_t in the close callback. Loop thread only.
template <auto kDrain>
uv_signal_t* watch_drain_signal(uv_loop_t* loop, void* owner) {
  auto* signal = new uv_signal_t;
  uv_signal_init(loop, signal);
  signal->data = owner;
  uv_signal_start(
      signal, [](uv_signal_t* s, int) { kDrain(s->data); }, SIGUSR1);
  return signal;
}

}  // namespace wheel::jobs
