// Internal: Connection, one accepted client: its socket, its partial line, its timeouts.
//
// Memory. An idle connection is one allocation (this object, uv_tcp_t included) plus one timer
// node per enabled idle kind. Reads land in the loop's shared buffer (ServerCore::read_buffer);
// only an incomplete line is copied here, into a buffer freed once the line completes.
//
// Lifetime. ServerCore creates it on accept; close_with() or abort() begins the close (the
// connection leaves the server's counts and cancels its timeouts at once); the libuv close
// callback deletes it. Everything here is loop thread only.
#pragma once

#include <uv.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string_view>
#include <vector>

#include "wheel/timeout.h"

namespace wheel::net {

class ServerCore;

enum class IdleKind : std::uint8_t { kReader = 0, kWriter = 1, kAll = 2 };

// The bytes of an incomplete line; empty costs no heap.
class PartialLine {
 public:
  PartialLine() = default;
  PartialLine(const PartialLine&) = delete;
  PartialLine& operator=(const PartialLine&) = delete;
  ~PartialLine() { std::free(data_); }

  void append(const char* bytes, std::size_t n);
  void clear() {
    std::free(data_);
    data_ = nullptr;
    size_ = capacity_ = 0;
  }
  std::size_t size() const { return size_; }
  std::string_view view() const { return {data_, size_}; }

 private:
  char* data_ = nullptr;
  std::uint32_t size_ = 0;
  std::uint32_t capacity_ = 0;
};

class Connection {
 public:
  // `id` is the slot + generation ServerCore looks it up by. Initializes the handle.
  Connection(ServerCore* core, std::uint64_t id);
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Accepts the pending client of `listener` and starts reading. Returns 0 or a libuv error;
  // on error the caller aborts the connection.
  int start(uv_stream_t* listener);

  // Appends to the reply of the current read batch, flushed once the batch is parsed (one
  // write per batch, however many commands it held). Outside a read, prefer send().
  void reply(std::string_view bytes);

  // Writes now: what the kernel does not take is queued; queueing past max_output closes the
  // connection as a slow consumer. Records write activity. Does nothing once closing.
  void send(std::string_view bytes);

  // Flushes the pending reply plus `last_words`, then closes: half-close (FIN) once written, or
  // at once when output is still queued. Idempotent.
  void close_with(std::string_view last_words);

  // Closes at once, dropping queued output. Idempotent.
  void abort();

  std::uint64_t id() const { return id_; }
  bool closing() const { return closing_; }
  uv_handle_t* handle() { return reinterpret_cast<uv_handle_t*>(&tcp_); }

  // Loop times (ms) of the last read and the last write.
  std::uint64_t last_read_ms = 0;
  std::uint64_t last_write_ms = 0;
  // The live idle timeout per kind (empty when that kind is disabled or is being handled).
  std::array<TimeoutHandle, 3> idle;
  // Pending DELAY messages, allocated on the first DELAY.
  std::unique_ptr<std::vector<TimeoutHandle>> delayed;

 private:
  struct WriteRequest;

  static void on_alloc(uv_handle_t* handle, std::size_t suggested, uv_buf_t* buf);
  static void on_read(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf);
  static void on_write(uv_write_t* req, int status);
  static void on_shutdown(uv_shutdown_t* req, int status);
  static void on_close(uv_handle_t* handle);

  void consume(const char* data, std::size_t n);
  void line_too_long();
  void flush_reply();
  void begin_close();

  // The loop's data is its ServerCore: one pointer less per connection.
  ServerCore* core() const { return static_cast<ServerCore*>(tcp_.loop->data); }

  uv_tcp_t tcp_;
  std::uint64_t id_;
  PartialLine partial_;
  std::uint32_t queued_output_ = 0;  // bytes handed to uv_write, not yet written
  bool closing_ = false;
};

}  // namespace wheel::net
