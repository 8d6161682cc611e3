// SPDX-License-Identifier: Apache-2.0
#include "uv_loop.h"

#include "wheel/net/uv_error.h"

namespace wheel::bench {

UvLoop::UvLoop() {
  auto loop = std::make_unique<uv_loop_t>();
  net::check_uv(uv_loop_init(loop.get()), "uv_loop_init");
  loop_.reset(loop.release());  // initialised: from here CloseLoop closes it
}

void UvLoop::CloseLoop::operator()(uv_loop_t* loop) const {
  uv_walk(
      loop,
      [](uv_handle_t* h, void*) {
        if (!uv_is_closing(h)) uv_close(h, nullptr);
      },
      nullptr);
  uv_run(loop, UV_RUN_DEFAULT);
  uv_loop_close(loop);
  delete loop;
}

}  // namespace wheel::bench
