// SPDX-License-Identifier: Apache-2.0
// Internal: ConnectionHost, all that a Connection may ask of the server that holds it — and
// the only way it reaches that server, so that the connection does not depend on the server's
// header (nor the server's on anything but this and connection.h). Loop thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "wheel/net/close_reason.h"
#include "wheel/net/tcp_server_counters.h"

namespace wheel::net {

class Connection;

class ConnectionHost {
 public:
  // The loop's clock, in ms (uv_now).
  virtual std::uint64_t now_ms() const = 0;
  // The epoll set the connection's socket is registered in.
  virtual int epoll_fd() const = 0;
  // The buffer every connection reads into (kReadBufferSize bytes), shared: valid until the
  // next read.
  virtual char* read_buffer() = 0;
  static constexpr std::size_t kReadBufferSize = std::size_t{64} * 1024;
  // Queued output beyond which a connection is a slow consumer.
  virtual std::size_t max_output() const = 0;
  virtual TcpServerCounters& counts() = 0;

  // Hands one read to the handler; replies sent meanwhile are written once, after it.
  virtual void dispatch(Connection& c, std::string_view bytes) = 0;
  // The reply batch of `c` while its read is dispatched, else nullptr.
  virtual std::string* batch_of(const Connection& c) = 0;
  // Bytes batch_of(c) holds now (0 when there is no batch; creates none).
  virtual std::size_t batched_bytes(const Connection& c) const = 0;
  // `c` resumed its input with lines held (Framing::kLines): hand them to the handler now, or
  // right after the read being dispatched.
  virtual void resume_held(Connection& c) = 0;
  // `c`'s queued output fell to its low-water mark: tell the handler.
  virtual void on_output_below(Connection& c) = 0;
  // `c` read EOF while open: the handler decides what it still owes.
  virtual void on_input_end(Connection& c) = 0;
  // `c` began closing for `reason` (the handler's on_close runs here).
  virtual void on_closing(Connection& c, CloseReason reason) = 0;
  // `c` began closing with output queued: reset if still writing after close_grace.
  virtual void on_draining(Connection& c) = 0;
  // `c` stopped writing its last words (all written, or reset).
  virtual void on_drained(Connection& c) = 0;
  // `c` closed its socket: free it after this turn of the loop, as libuv frees a closed handle,
  // so that callers up the stack (and later events of the same batch) still see it.
  virtual void release_later(Connection& c) = 0;

 protected:
  ~ConnectionHost() = default;
};

}  // namespace wheel::net
