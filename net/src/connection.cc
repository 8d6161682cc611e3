#include "connection.h"

#include <spdlog/spdlog.h>

#include <cassert>
#include <cstring>
#include <new>

#include "line_protocol.h"
#include "server_core.h"

namespace wheel::net {

void PartialLine::append(const char* bytes, std::size_t n) {
  if (n == 0) return;
  if (size_ + n > capacity_) {
    std::size_t capacity = capacity_ == 0 ? 64 : capacity_;
    while (capacity < size_ + n) capacity *= 2;
    void* grown = std::realloc(data_, capacity);
    if (grown == nullptr) throw std::bad_alloc();
    data_ = static_cast<char*>(grown);
    capacity_ = static_cast<std::uint32_t>(capacity);
  }
  std::memcpy(data_ + size_, bytes, n);
  size_ += static_cast<std::uint32_t>(n);
}

// A uv_write request and its bytes in one allocation.
struct Connection::WriteRequest {
  uv_write_t req;
  uv_buf_t buf;
  std::uint32_t size;

  static WriteRequest* create(std::string_view bytes) {
    void* memory = std::malloc(sizeof(WriteRequest) + bytes.size());
    if (memory == nullptr) throw std::bad_alloc();
    auto* w = new (memory) WriteRequest;
    char* data = static_cast<char*>(memory) + sizeof(WriteRequest);
    std::memcpy(data, bytes.data(), bytes.size());
    w->buf = uv_buf_init(data, static_cast<unsigned>(bytes.size()));
    w->size = static_cast<std::uint32_t>(bytes.size());
    return w;
  }
  static void destroy(WriteRequest* w) { std::free(w); }
};

Connection::Connection(ServerCore* core, std::uint64_t id) : id_(id) {
  uv_tcp_init(core->loop(), &tcp_);  // cannot fail on Linux: the socket comes from accept
  tcp_.data = this;
}

int Connection::start(uv_stream_t* listener) {
  auto* stream = reinterpret_cast<uv_stream_t*>(&tcp_);
  int rc = uv_accept(listener, stream);
  if (rc != 0) return rc;
  uv_tcp_nodelay(&tcp_, 1);  // replies are tiny; Nagle would hold them back
  last_read_ms = last_write_ms = uv_now(core()->loop());
  return uv_read_start(stream, &Connection::on_alloc, &Connection::on_read);
}

void Connection::on_alloc(uv_handle_t* handle, std::size_t, uv_buf_t* buf) {
  // Every connection shares the loop's buffer: on_read consumes it before the next read.
  ServerCore* core = static_cast<Connection*>(handle->data)->core();
  *buf = uv_buf_init(core->read_buffer(), static_cast<unsigned>(core->read_buffer_size()));
}

void Connection::on_read(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf) {
  auto* self = static_cast<Connection*>(stream->data);
  if (nread == 0 || self->closing_) return;
  if (nread < 0) {
    if (nread != UV_EOF) {
      spdlog::debug("connection {:#x}: read failed: {}", self->id_,
                    uv_err_name(static_cast<int>(nread)));
    }
    self->abort();
    return;
  }
  self->last_read_ms = uv_now(self->core()->loop());
  self->core()->stats().bytes_in += static_cast<std::uint64_t>(nread);
  self->consume(buf->base, static_cast<std::size_t>(nread));
  self->flush_reply();
}

void Connection::consume(const char* p, std::size_t n) {
  const char* const end = p + n;
  const std::size_t max_line = core()->options().max_line;
  if (partial_.size() > 0) {  // complete the line begun in an earlier read
    const auto* nl = static_cast<const char*>(std::memchr(p, '\n', n));
    const char* stop = nl != nullptr ? nl : end;
    if (partial_.size() + static_cast<std::size_t>(stop - p) > max_line + 1) {
      return line_too_long();  // + 1: the line may still end in "\r\n"
    }
    partial_.append(p, static_cast<std::size_t>(stop - p));
    if (nl == nullptr) return;
    if (strip_cr(partial_.view()).size() > max_line) return line_too_long();
    core()->on_line(this, partial_.view());
    partial_.clear();
    if (closing_) return;
    p = nl + 1;
  }
  while (p < end) {
    const auto* nl =
        static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)));
    if (nl == nullptr) break;
    const std::string_view line(p, static_cast<std::size_t>(nl - p));
    if (strip_cr(line).size() > max_line) return line_too_long();
    core()->on_line(this, line);
    if (closing_) return;
    p = nl + 1;
  }
  if (p == end) return;
  if (static_cast<std::size_t>(end - p) > max_line + 1) return line_too_long();
  partial_.append(p, static_cast<std::size_t>(end - p));  // only the incomplete tail is copied
}

void Connection::line_too_long() {
  core()->stats().errors++;
  spdlog::debug("connection {:#x}: line longer than {} bytes", id_, core()->options().max_line);
  close_with("ERR line too long\n");
}

void Connection::reply(std::string_view bytes) {
  core()->reply_buffer().append(bytes);
}

void Connection::flush_reply() {
  std::string& pending = core()->reply_buffer();
  if (pending.empty()) return;
  send(pending);
  pending.clear();
}

void Connection::send(std::string_view bytes) {
  if (closing_ || bytes.empty()) return;
  auto* stream = reinterpret_cast<uv_stream_t*>(&tcp_);
  last_write_ms = uv_now(core()->loop());
  core()->stats().bytes_out += bytes.size();
  std::size_t written = 0;
  if (queued_output_ == 0) {  // nothing queued: try the kernel first, copy nothing on success
    uv_buf_t buf =
        uv_buf_init(const_cast<char*>(bytes.data()), static_cast<unsigned>(bytes.size()));
    const int n = uv_try_write(stream, &buf, 1);
    if (n < 0 && n != UV_EAGAIN) {
      spdlog::debug("connection {:#x}: write failed: {}", id_, uv_err_name(n));
      return abort();
    }
    written = n > 0 ? static_cast<std::size_t>(n) : 0;
    if (written == bytes.size()) return;
  }
  const std::size_t rest = bytes.size() - written;
  if (queued_output_ + rest > core()->options().max_output) {
    core()->stats().slow_consumers++;
    spdlog::warn("worker {}: closing a slow consumer (connection {:#x}): {} bytes of output queued",
                 core()->options().worker_index, id_, queued_output_ + rest);
    return abort();
  }
  WriteRequest* w = WriteRequest::create(bytes.substr(written));
  const int rc = uv_write(&w->req, stream, &w->buf, 1, &Connection::on_write);
  if (rc != 0) {
    WriteRequest::destroy(w);
    spdlog::debug("connection {:#x}: write failed: {}", id_, uv_err_name(rc));
    return abort();
  }
  queued_output_ += static_cast<std::uint32_t>(rest);
}

void Connection::on_write(uv_write_t* req, int status) {
  auto* w = reinterpret_cast<WriteRequest*>(req);  // req is the first member
  // The connection is still alive: libuv cancels pending writes before the close callback.
  auto* self = static_cast<Connection*>(req->handle->data);
  self->queued_output_ -= w->size;
  WriteRequest::destroy(w);
  if (status < 0 && status != UV_ECANCELED) {
    spdlog::debug("connection {:#x}: write failed: {}", self->id_, uv_err_name(status));
    self->abort();
  }
}

void Connection::close_with(std::string_view last_words) {
  if (closing_) return;
  reply(last_words);
  flush_reply();
  if (closing_) return;  // the write failed and aborted
  begin_close();
  auto* stream = reinterpret_cast<uv_stream_t*>(&tcp_);
  uv_read_stop(stream);
  if (queued_output_ == 0) {
    // Half-close so the last words arrive before the FIN; close once the shutdown completes.
    auto* req = new uv_shutdown_t;
    if (uv_shutdown(req, stream, &Connection::on_shutdown) == 0) return;
    delete req;
  }
  uv_close(handle(), &Connection::on_close);
}

void Connection::abort() {
  if (closing_) {
    if (!uv_is_closing(handle())) uv_close(handle(), &Connection::on_close);
    return;
  }
  begin_close();
  uv_close(handle(), &Connection::on_close);
}

void Connection::begin_close() {
  assert(!closing_);
  closing_ = true;
  partial_.clear();
  core()->reply_buffer().clear();
  core()->on_closing(this);
}

void Connection::on_shutdown(uv_shutdown_t* req, int) {
  auto* self = static_cast<Connection*>(req->handle->data);
  delete req;
  if (!uv_is_closing(self->handle())) uv_close(self->handle(), &Connection::on_close);
}

void Connection::on_close(uv_handle_t* handle) {
  auto* self = static_cast<Connection*>(handle->data);
  ServerCore* core = self->core();
  const std::uint64_t id = self->id_;
  delete self;
  core->on_closed(id);
}

}  // namespace wheel::net
