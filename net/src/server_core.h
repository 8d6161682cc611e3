// SPDX-License-Identifier: Apache-2.0
// Internal: ServerCore, the implementation behind TcpServer: the loop, the timer, the listener,
// the connection table, idle detection and the shutdown sequence. Connection calls back into it.
// Loop thread only, except request_shutdown() and port().
#pragma once

#include <uv.h>

#include <atomic>
#include <cassert>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "wheel/net/connection.h"
#include "wheel/net/connection_handler.h"
#include "wheel/net/idle_detector.h"
#include "wheel/net/line_framer.h"
#include "wheel/net/loop_timer.h"
#include "wheel/net/tcp_server.h"
#include "wheel/net/tcp_server_options.h"

namespace wheel::net {

class ServerCore final : private IdleDetector::Owner {
 public:
  // `given_loop` null: the core creates (and closes) its own loop.
  ServerCore(uv_loop_t* given_loop, TcpServerOptions options, ConnectionHandler& handler);
  ~ServerCore();
  ServerCore(const ServerCore&) = delete;
  ServerCore& operator=(const ServerCore&) = delete;

  std::uint16_t listen();
  void handle_signals();
  void run();
  void request_shutdown();  // safe from any thread
  bool stopped() const { return finished_ && open_handles_ == 0; }
  std::uint16_t port() const { return port_.load(std::memory_order_acquire); }
  Connection* find(std::uint64_t id);
  LoopTimer& timer() { return *timer_; }
  uv_loop_t* loop() { return loop_; }
  const TcpServerOptions& options() const { return options_; }
  TcpServerCounters counters() const;

  // For Connection.
  TcpServerCounters& counts() { return counts_; }
  ConnectionHandler& handler() { return handler_; }
  char* read_buffer() { return read_buffer_.get(); }
  static constexpr std::size_t kReadBufferSize = std::size_t{64} * 1024;
  // Hands one read of `c` to the handler; replies sent meanwhile are written once, after it.
  void dispatch(Connection* c, std::string_view bytes);
  // The reply batch of `c` while its read is dispatched, else nullptr.
  std::string* batch_of(const Connection* c) { return dispatching_ == c ? &batch_ : nullptr; }
  // The reason a handler's own close reports (kLineTooLong inside on_line_too_long()).
  CloseReason local_close_reason() const { return local_reason_; }
  void on_closing(Connection* c, CloseReason reason);  // c began closing
  // c read EOF while open: the handler decides (its close reports kPeerClosed).
  void on_input_end(Connection* c);
  // c began closing with output queued: aborted if still writing after close_grace.
  void on_draining(Connection* c);
  // c stopped writing its last words (all written, or aborted).
  void on_drained(Connection* c);
  // The epoll set every open connection's socket is registered in.
  int epoll_fd() const { return epoll_fd_; }
  // c closed its socket: freed after this turn of the loop, as libuv frees a closed handle, so
  // that callers up the stack (and later events of the same batch) still see it, closing.
  void release_later(Connection* c);

 private:
  IdleWatch* find_watch(std::uint64_t id) override;
  void on_idle(std::uint64_t id, IdleEvent event) override;

  static void on_listener_readable(uv_poll_t* poll, int status, int events);
  static void on_connections_ready(uv_poll_t* poll, int status, int events);
  // Frees the released connections and updates the table (may finish a shutdown).
  void free_released();
  void on_freed(std::uint64_t id);
  void accept_one(int fd);
  void reject_full(int fd);
  void reject_for_descriptors();
  void log_accept_trouble(const char* what, int error);
  std::uint64_t allocate_slot();
  void init_handle(int rc, const char* what);  // counts an open handle or throws
  void close_handle(void* handle);
  void assert_in_loop_thread() const {
    assert(loop_thread_ == std::thread::id() || loop_thread_ == std::this_thread::get_id());
  }
  void on_drain_deadline();
  void begin_shutdown();
  void force_close_all();
  void finish_shutdown();

  const TcpServerOptions options_;
  ConnectionHandler& handler_;
  const LineFramer framer_;
  std::unique_ptr<uv_loop_t> own_loop_;
  uv_loop_t* loop_;
  std::unique_ptr<LoopTimer> timer_;
  std::unique_ptr<IdleDetector> detector_;
  bool watch_idle_ = false;

  // The listening socket is the server's own (accept4 on a uv_poll_t), not a uv_tcp_t: libuv's
  // reserve-descriptor trick would close the clients it cannot accept without a word.
  // The connections' sockets live in this epoll set, watched by one poll handle: a uv_tcp_t per
  // connection would cost 248 bytes each.
  int epoll_fd_ = -1;
  uv_poll_t connections_poll_;
  uv_idle_t reaper_;  // runs free_released() on the next turn while released_ is not empty
  std::vector<Connection*> released_;
  uv_poll_t listener_;
  int listen_fd_ = -1;
  int spare_fd_ = -1;  // given up to accept one client at EMFILE and tell it "server full"
  bool listening_ = false;
  uv_signal_t sigint_, sigterm_;
  bool signals_ = false;
  uv_timer_t force_close_timer_;
  // Closing connections still writing, in the order they began (all have the same grace, so
  // the deadlines are in order too): (id, deadline in loop ms). One timer for the first.
  std::deque<std::pair<std::uint64_t, std::uint64_t>> draining_;
  uv_timer_t drain_timer_;
  uv_async_t shutdown_async_;
  std::mutex shutdown_mutex_;
  bool shutdown_async_open_ = false;  // guarded by shutdown_mutex_
  int open_handles_ = 0;              // initialised handles whose close callback has not run
  std::atomic<std::uint16_t> port_{0};

  std::thread::id loop_thread_;  // set by run()
  bool shutting_down_ = false;
  bool finished_ = false;
  // The connection table: slot -> connection, until its close callback. An id is
  // (generation << 32 | slot) with a 30-bit generation, so a timeout of a closed connection
  // does not match the connection that reuses its slot.
  std::vector<Connection*> slots_;
  std::vector<std::uint32_t> free_slots_;
  static constexpr std::uint32_t kGenerationMask = (1u << 30) - 1;
  std::uint32_t generation_ = 0;
  std::size_t allocated_ = 0;  // Connection objects alive, closing ones included

  std::unique_ptr<char[]> read_buffer_;
  Connection* dispatching_ = nullptr;
  std::string batch_;
  CloseReason local_reason_ = CloseReason::kLocal;
  TcpServerCounters counts_;
  std::uint64_t last_accept_error_log_ms_ = 0;
  bool accept_error_logged_ = false;
};

}  // namespace wheel::net
