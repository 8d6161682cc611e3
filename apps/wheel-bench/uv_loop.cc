// SPDX-License-Identifier: Apache-2.0
#include "uv_loop.h"

#include "wheel/net/uv_error.h"

namespace wheel::bench {

UvLoop::UvLoop() {
  net::check_uv(uv_loop_init(&loop_), "uv_loop_init");
}

UvLoop::~UvLoop() {
  uv_walk(
      &loop_,
      [](uv_handle_t* h, void*) {
        if (!uv_is_closing(h)) uv_close(h, nullptr);
      },
      nullptr);
  uv_run(&loop_, UV_RUN_DEFAULT);
  uv_loop_close(&loop_);
}

}  // namespace wheel::bench
