// SPDX-License-Identifier: Apache-2.0
// Internal: Reactor, the body of a TcpServer on its loop: it owns the Acceptor, the
// ConnectionTable, the epoll set of the connections' sockets (one libuv poll handle for all:
// a uv_tcp_t each would cost 248 bytes), the LoopTimer and IdleDetector, the reply batch of
// the read being handled, the closes (close_grace) and the shutdown (shutdown_grace).
// Connections reach it only as their ConnectionHost; TcpServer's methods (tcp_server.cc) drive
// it (listen, signals, run, shutdown, port, counters), and their contracts hold here.
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
#include <unordered_map>
#include <utility>
#include <vector>

#include "acceptor.h"
#include "connection_host.h"
#include "connection_table.h"
#include "wheel/net/connection.h"
#include "wheel/net/connection_handler.h"
#include "wheel/net/idle_detector.h"
#include "wheel/net/line_framer.h"
#include "wheel/net/loop_timer.h"
#include "wheel/net/tcp_server_counters.h"
#include "wheel/net/tcp_server_options.h"

namespace wheel::net {

class Reactor final : private ConnectionHost, private Acceptor::Sink, private IdleDetector::Owner {
 public:
  // `given_loop` null: the reactor creates (and closes) its own loop. Throws
  // std::invalid_argument for invalid options, std::system_error when libuv fails.
  Reactor(uv_loop_t* given_loop, TcpServerOptions options, ConnectionHandler& handler);
  ~Reactor();
  Reactor(const Reactor&) = delete;
  Reactor& operator=(const Reactor&) = delete;

  // The open connection `id` (not closing), or nullptr.
  Connection* find(std::uint64_t id);

 private:
  // TcpServer's methods (tcp_server.cc) are the reactor's public face: they work on its state
  // directly rather than through a second copy of each method here.
  friend class TcpServer;

  bool stopped() const { return finished_ && open_handles_ == 0 && acceptor_.closed(); }

  // ConnectionHost
  std::uint64_t now_ms() const override { return uv_now(loop_); }
  int epoll_fd() const override { return epoll_fd_; }
  char* read_buffer() override { return read_buffer_.get(); }
  std::size_t max_output() const override { return options_.max_output; }
  TcpServerCounters& counts() override { return counts_; }
  void dispatch(Connection& c, std::string_view bytes) override;
  std::string* batch_of(const Connection& c) override;
  std::size_t batched_bytes(const Connection& c) const override;
  void resume_held(Connection& c) override;
  void on_output_below(Connection& c) override { handler_.on_output_below(c); }
  void on_input_end(Connection& c) override;
  void on_closing(Connection& c, CloseReason reason) override;
  void on_draining(Connection& c) override;
  void on_drained(Connection& c) override;
  void release_later(Connection& c) override;
  // Acceptor::Sink
  bool full() const override { return counts_.connections >= options_.max_connections; }
  void on_accepted(int fd) override;
  std::string_view reject_line() override { return handler_.reject_line(); }
  // IdleDetector::Owner
  IdleWatch* find_watch(std::uint64_t id) override;
  void on_idle(std::uint64_t id, IdleEvent event) override;

  static void on_connections_ready(uv_poll_t* poll, int status, int events);
  void on_drain_deadline();
  void start_drain_timer(std::uint64_t after_ms);
  // Frees the released connections (may finish a shutdown).
  void free_released();
  void init_handle(int rc, const char* what);  // counts an open handle or throws
  void close_handle(void* handle);
  void assert_in_loop_thread() const {
    assert(loop_thread_ == std::thread::id() || loop_thread_ == std::this_thread::get_id());
  }
  // Writes what the timer's tasks sent in this turn, one send(2) per connection.
  void flush_turn_batches();
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
  TcpServerCounters counts_;
  Acceptor acceptor_;
  ConnectionTable table_;

  int epoll_fd_ = -1;
  uv_poll_t connections_poll_;
  uv_idle_t reaper_;  // runs free_released() on the next turn while released_ is not empty
  std::vector<Connection*> released_;
  // Closing connections still writing, in the order they began (one grace for all, so the
  // deadlines are in order too): (id, deadline in loop ms). One timer for the first.
  std::deque<std::pair<std::uint64_t, std::uint64_t>> draining_;
  uv_timer_t drain_timer_;
  uv_signal_t sigint_, sigterm_;
  bool signals_ = false;
  uv_timer_t shutdown_timer_;  // shutdown_grace
  uv_async_t shutdown_async_;
  std::mutex shutdown_mutex_;
  bool shutdown_async_open_ = false;  // guarded by shutdown_mutex_
  int open_handles_ = 0;              // initialised handles whose close callback has not run
  std::atomic<std::uint16_t> port_{0};

  std::thread::id loop_thread_;  // set by run()
  bool shutting_down_ = false;
  bool finished_ = false;

  std::unique_ptr<char[]> read_buffer_;
  Connection* dispatching_ = nullptr;
  std::string batch_;
  // Connections that resumed their input, lines held, while another's read was dispatched:
  // their lines go to the handler right after it (ids).
  std::vector<std::uint64_t> resumed_;
  // While the timer runs a turn's tasks: what they send, per connection, in order of first send
  // (a burst of due DELAYs was one send(2) per line, most of the loop's time). Written at the
  // turn's end by flush_turn_batches(); a connection that closes meanwhile loses its batch, as a
  // read's replies are lost when it closes.
  bool in_timer_turn_ = false;
  std::vector<std::pair<Connection*, std::string>> turn_batches_;
  std::unordered_map<const Connection*, std::size_t> turn_batch_index_;
};

}  // namespace wheel::net
