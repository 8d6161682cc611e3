// SPDX-License-Identifier: Apache-2.0
#include "redis_uv.h"

#include <hiredis/hiredis.h>
#include <hiredis/sds.h>

#include "redis_client_internal.h"

namespace wheel::jobs {
namespace {

// hiredis's event hooks for one context, on a uv_poll_t.
struct UvEvents {
  redisAsyncContext* context = nullptr;
  uv_poll_t handle{};
  int events = 0;
};

void uv_events_poll(uv_poll_t* handle, int status, int events) {
  auto* p = static_cast<UvEvents*>(handle->data);
  if (p->context == nullptr) return;
  if (status < 0) events = p->events;  // let hiredis find the error itself
  if (p->context != nullptr && (events & UV_READABLE) != 0) RedisReadScope::read(p->context);
  if (p->context != nullptr && (events & UV_WRITABLE) != 0) redisAsyncHandleWrite(p->context);
}

void uv_events_update(UvEvents* p, int events) {
  p->events = events;
  if (events != 0) {
    uv_poll_start(&p->handle, events, uv_events_poll);
  } else {
    uv_poll_stop(&p->handle);
  }
}

// hiredis's addRead/delRead/addWrite/delWrite: `kEvent` on (kOn) or off in the poll.
template <int kEvent, bool kOn>
void toggle_events(void* d) {
  auto* e = static_cast<UvEvents*>(d);
  uv_events_update(e, kOn ? (e->events | kEvent) : (e->events & ~kEvent));
}

}  // namespace

bool attach_uv(redisAsyncContext* ac, uv_loop_t* loop) {
  auto* p = new UvEvents;
  if (uv_poll_init(loop, &p->handle, ac->c.fd) != 0) {
    delete p;
    return false;
  }
  p->context = ac;
  p->handle.data = p;
  ac->ev.data = p;
  ac->ev.addRead = &toggle_events<UV_READABLE, true>;
  ac->ev.delRead = &toggle_events<UV_READABLE, false>;
  ac->ev.addWrite = &toggle_events<UV_WRITABLE, true>;
  ac->ev.delWrite = &toggle_events<UV_WRITABLE, false>;
  ac->ev.cleanup = [](void* d) {
    auto* e = static_cast<UvEvents*>(d);
    e->context = nullptr;
    uv_close(reinterpret_cast<uv_handle_t*>(&e->handle),
             [](uv_handle_t* h) { delete static_cast<UvEvents*>(h->data); });
  };
  return true;
}

void flush_output(redisAsyncContext* ac) {
  if ((ac->c.flags & REDIS_CONNECTED) != 0 && ac->c.obuf != nullptr && sdslen(ac->c.obuf) > 0) {
    redisAsyncHandleWrite(ac);
  }
}

}  // namespace wheel::jobs
