// SPDX-License-Identifier: Apache-2.0
// Internal. The hiredis-on-libuv adapter: hiredis's event hooks on a uv_poll_t. hiredis ships
// such an adapter, but it ignores poll errors, so a refused connect was never noticed: here an
// error is handed to hiredis as writability, and its connect check reads the socket error and
// fails the connection at once. Reads go through RedisReadScope (redis_client_internal.h).
//
// Threads: the loop's thread only.
#pragma once

#include <hiredis/async.h>
#include <uv.h>

namespace wheel::jobs {

// Hooks `ac` to a uv_poll_t on `loop` (closed and freed by hiredis's cleanup hook, when the
// context is freed). False when libuv refuses the descriptor.
bool attach_uv(redisAsyncContext* ac, uv_loop_t* loop);
// Writes hiredis's output buffer, if any, now rather than on the poll's next writable event.
void flush_output(redisAsyncContext* ac);

}  // namespace wheel::jobs
