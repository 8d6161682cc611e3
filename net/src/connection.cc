// SPDX-License-Identifier: Apache-2.0
#include "wheel/net/connection.h"

#include <spdlog/spdlog.h>

#include "wheel/logger.h"

#include <cassert>
#include <cstdlib>
#include <cstring>
#include <new>

#include "server_core.h"
#include "wheel/net/socket_address.h"

namespace wheel::net {

const char* to_string(CloseReason reason) {
  switch (reason) {
    case CloseReason::kLocal:
      return "local";
    case CloseReason::kPeerClosed:
      return "peer closed";
    case CloseReason::kError:
      return "error";
    case CloseReason::kSlowConsumer:
      return "slow consumer";
    case CloseReason::kLineTooLong:
      return "line too long";
    case CloseReason::kShutdown:
      return "shutdown";
  }
  return "?";
}

// A uv_write request and its bytes in one allocation.
struct Connection::WriteRequest {
  uv_write_t req;
  uv_buf_t buf;

  static WriteRequest* create(std::string_view bytes) {
    void* memory = std::malloc(sizeof(WriteRequest) + bytes.size());
    if (memory == nullptr) throw std::bad_alloc();
    auto* w = new (memory) WriteRequest;
    char* data = static_cast<char*>(memory) + sizeof(WriteRequest);
    std::memcpy(data, bytes.data(), bytes.size());
    w->buf = uv_buf_init(data, static_cast<unsigned>(bytes.size()));
    return w;
  }
  static void destroy(WriteRequest* w) { std::free(w); }
};

Connection::Connection(ServerCore* core, std::uint64_t id) : id_and_closing_(id) {
  tcp_.data = core;
}

Connection* Connection::of(uv_handle_t* handle) {
  // tcp_ is the first member (and Connection has no base): the handle's address is its own.
  return reinterpret_cast<Connection*>(handle);
}

std::string Connection::peer() const {
  sockaddr_storage addr{};
  int len = sizeof(addr);
  if (uv_tcp_getpeername(&tcp_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "?";
  return format_address(reinterpret_cast<const sockaddr*>(&addr));
}

void Connection::on_alloc(uv_handle_t* handle, std::size_t, uv_buf_t* buf) {
  // Every connection shares the server's buffer: on_read consumes it before the next read.
  ServerCore* core = of(handle)->core();
  *buf = uv_buf_init(core->read_buffer(), static_cast<unsigned>(ServerCore::kReadBufferSize));
}

void Connection::on_read(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf) {
  Connection* self = of(reinterpret_cast<uv_handle_t*>(stream));
  if (nread == 0 || self->closing()) return;
  if (nread < 0) {
    if (nread != UV_EOF && nread != UV_ECONNRESET) {
      wheel::logger()->debug("connection {:#x}: read failed: {}", self->id(),
                             uv_err_name(static_cast<int>(nread)));
      return self->abort(CloseReason::kError);
    }
    return self->abort(CloseReason::kPeerClosed);
  }
  ServerCore* core = self->core();
  self->idle_.record_read(uv_now(core->loop()));
  core->counts().bytes_in += static_cast<std::uint64_t>(nread);
  core->dispatch(self, std::string_view(buf->base, static_cast<std::size_t>(nread)));
}

void Connection::send(std::string_view bytes) {
  if (closing() || bytes.empty()) return;
  if (std::string* batch = core()->batch_of(this)) {
    batch->append(bytes);  // written once the read is handled
    return;
  }
  write_now(bytes);
}

void Connection::write_now(std::string_view bytes) {
  ServerCore* core = this->core();
  auto* stream = reinterpret_cast<uv_stream_t*>(&tcp_);
  idle_.record_write(uv_now(core->loop()));
  core->counts().bytes_out += bytes.size();
  std::size_t written = 0;
  if (tcp_.write_queue_size == 0) {  // nothing queued: try the kernel first, copy nothing
    uv_buf_t buf =
        uv_buf_init(const_cast<char*>(bytes.data()), static_cast<unsigned>(bytes.size()));
    const int n = uv_try_write(stream, &buf, 1);
    if (n < 0 && n != UV_EAGAIN) {
      wheel::logger()->debug("connection {:#x}: write failed: {}", id(), uv_err_name(n));
      return abort(CloseReason::kError);
    }
    written = n > 0 ? static_cast<std::size_t>(n) : 0;
    if (written == bytes.size()) return;
  }
  const std::size_t rest = bytes.size() - written;
  const std::size_t max_output = core->options().max_output;
  if (rest > max_output || tcp_.write_queue_size > max_output - rest) {
    wheel::logger()->warn("closing a slow consumer (connection {:#x}): {} bytes of output queued",
                          id(), tcp_.write_queue_size + rest);
    return abort(CloseReason::kSlowConsumer);
  }
  WriteRequest* w = WriteRequest::create(bytes.substr(written));
  const int rc = uv_write(&w->req, stream, &w->buf, 1, &Connection::on_write);
  if (rc != 0) {
    WriteRequest::destroy(w);
    wheel::logger()->debug("connection {:#x}: write failed: {}", id(), uv_err_name(rc));
    abort(CloseReason::kError);
  }
}

void Connection::on_write(uv_write_t* req, int status) {
  auto* w = reinterpret_cast<WriteRequest*>(req);  // req is the first member
  // The connection is still alive: libuv cancels pending writes before the close callback.
  Connection* self = of(reinterpret_cast<uv_handle_t*>(req->handle));
  WriteRequest::destroy(w);
  if (status == 0) {
    self->idle_.record_output_progress(uv_now(self->core()->loop()));
  } else if (status != UV_ECANCELED) {
    wheel::logger()->debug("connection {:#x}: write failed: {}", self->id(), uv_err_name(status));
    self->abort(CloseReason::kError);
  }
}

void Connection::close_with(std::string_view last_words) {
  close_with(last_words, core()->local_close_reason());
}

void Connection::close_with(std::string_view last_words, CloseReason reason) {
  if (closing()) return;
  if (std::string* batch = core()->batch_of(this)) {  // the replies so far, then the words
    batch->append(last_words);
    std::string pending;
    pending.swap(*batch);
    if (!pending.empty()) write_now(pending);
  } else if (!last_words.empty()) {
    write_now(last_words);
  }
  if (closing()) return;  // the write failed and aborted
  begin_close(reason);
  auto* stream = reinterpret_cast<uv_stream_t*>(&tcp_);
  uv_read_stop(stream);
  if (tcp_.write_queue_size == 0) {
    // Half-close so the last words arrive before the FIN; close once the shutdown completes.
    auto* req = new uv_shutdown_t;
    if (uv_shutdown(req, stream, &Connection::on_shutdown) == 0) return;
    delete req;
  }
  // Output still queued: a client that does not read would hold the connection forever.
  uv_close(reinterpret_cast<uv_handle_t*>(&tcp_), &Connection::on_closed);
}

void Connection::abort() {
  abort(core()->local_close_reason());
}

void Connection::abort(CloseReason reason) {
  auto* handle = reinterpret_cast<uv_handle_t*>(&tcp_);
  if (!closing()) begin_close(reason);
  if (!uv_is_closing(handle)) uv_close(handle, &Connection::on_closed);
}

void Connection::begin_close(CloseReason reason) {
  assert(!closing());
  id_and_closing_ |= kClosingBit;
  partial_.clear();
  core()->on_closing(this, reason);
}

void Connection::on_shutdown(uv_shutdown_t* req, int) {
  auto* handle = reinterpret_cast<uv_handle_t*>(req->handle);
  delete req;
  if (!uv_is_closing(handle)) uv_close(handle, &Connection::on_closed);
}

void Connection::on_closed(uv_handle_t* handle) {
  Connection* self = of(handle);
  ServerCore* core = self->core();
  const std::uint64_t id = self->id();
  delete self;
  core->on_closed(id);
}

}  // namespace wheel::net
