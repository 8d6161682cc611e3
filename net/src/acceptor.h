// SPDX-License-Identifier: Apache-2.0
// Internal: Acceptor, the listening socket of a TcpServer: accept4 in bounded batches, the
// connection limit, and the back-off when the process runs out of descriptors (a spare
// descriptor is given up to accept each waiting client, tell it reject_line() and close it).
// The socket is the server's own (accept4 on a uv_poll_t), not a uv_tcp_t: libuv's
// reserve-descriptor trick would close the clients it cannot accept without a word.
// Loop thread only.
#pragma once

#include <uv.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "wheel/net/listen_socket.h"
#include "wheel/net/tcp_server_counters.h"

namespace wheel::net {

class Acceptor {
 public:
  // What the acceptor hands its clients to.
  class Sink {
   public:
    // True when a new client is to be refused (max_connections reached).
    virtual bool full() const = 0;
    // Takes `fd` (connected, non-blocking, close-on-exec).
    virtual void on_accepted(int fd) = 0;
    // The line a refused client is told; empty: none.
    virtual std::string_view reject_line() = 0;

   protected:
    ~Sink() = default;
  };

  // Counts into `counts` (rejected_full, rejected_emfile, accept_errors). Both must outlive it.
  Acceptor(uv_loop_t* loop, Sink& sink, TcpServerCounters& counts);
  ~Acceptor();
  Acceptor(const Acceptor&) = delete;
  Acceptor& operator=(const Acceptor&) = delete;

  // Binds (see bind_tcp_socket(); for a "unix:PATH" host bind_unix_socket() with `unix_mode`),
  // listens with `backlog` and starts accepting; returns the bound port (0 for a unix socket).
  // Throws std::system_error or std::invalid_argument. Call once.
  std::uint16_t listen(const std::string& host, std::uint16_t port, bool reuse_port, int backlog,
                       std::uint32_t unix_mode);
  // Stops accepting and closes the socket and handles (their callbacks run on the loop); a unix
  // socket's file is removed now (if it is still ours). Idempotent.
  void close();
  // True when no handle of the acceptor is open (never listened, or close() completed).
  bool closed() const { return open_handles_ == 0; }

 private:
  static void on_readable(uv_poll_t* poll, int status, int events);
  void reject_full(int fd);
  void reject_for_descriptors();
  void log_trouble(const char* what, int error);
  void close_handle(uv_handle_t* handle);

  uv_loop_t* const loop_;
  Sink& sink_;
  TcpServerCounters& counts_;
  uv_poll_t poll_;
  uv_timer_t backoff_;  // restarts the poll a moment after EMFILE left no spare descriptor
  int fd_ = -1;
  int spare_fd_ = -1;
  std::string unix_path_;  // a unix socket's file, removed by close(); empty: TCP
  BoundUnixSocket unix_bound_;
  bool open_ = false;  // listening: the handles need closing
  bool backoff_open_ = false;
  int open_handles_ = 0;
  std::uint64_t last_log_ms_ = 0;
  bool logged_ = false;
};

}  // namespace wheel::net
