// Internal: ServerCore, the implementation behind wheel::net::Server: the loop, the timer, the
// listener, the connection table, the idle and DELAY timeouts, and the shutdown sequence.
// Loop thread only, except request_shutdown() and port().
#pragma once

#include <uv.h>

#include <atomic>
#include <cassert>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "connection.h"
#include "loop_executor.h"
#include "wheel/hashed_wheel_timer.h"
#include "wheel/net/server_options.h"
#include "wheel/net/server_stats.h"

namespace wheel::net {

class ServerCore {
 public:
  explicit ServerCore(ServerOptions options);
  ~ServerCore();
  ServerCore(const ServerCore&) = delete;
  ServerCore& operator=(const ServerCore&) = delete;

  std::uint16_t listen();
  void handle_signals();
  ServerStats run();
  void request_shutdown();  // safe from any thread
  std::uint16_t port() const { return port_.load(std::memory_order_acquire); }

  // For Connection.
  uv_loop_t* loop() { return &loop_; }
  const ServerOptions& options() const { return options_; }
  ServerStats& stats() { return stats_; }
  std::string& reply_buffer() { return reply_; }
  char* read_buffer() { return read_buffer_.get(); }
  std::size_t read_buffer_size() const { return kReadBufferSize; }
  // Executes one complete line of `c` (its "\n" removed). May close `c`.
  void on_line(Connection* c, std::string_view line);
  // `c` began closing: cancel its timeouts, drop it from the counts.
  void on_closing(Connection* c);
  // The connection `id` was freed: release its slot.
  void on_closed(std::uint64_t id);

 private:
  static constexpr std::size_t kReadBufferSize = std::size_t{64} * 1024;
  struct IdleTask;
  struct DelayedTask;

  static void on_connection(uv_stream_t* listener, int status);
  void accept_one();
  void reject_full();
  Connection* find(std::uint64_t id);
  std::uint64_t allocate_slot();

  // server_commands.cc: idle detection and DELAY on the wheel.
  void start_idle_timeouts(Connection* c);
  void schedule_idle(Connection* c, IdleKind kind, std::chrono::milliseconds delay);
  void on_idle_timeout(std::uint64_t id, IdleKind kind, Timeout* fired);
  void schedule_delayed(Connection* c, std::uint64_t delay_ms, std::string_view text);
  void on_delayed(std::uint64_t id, Timeout* fired, std::string_view text);

  // Debug builds check that loop-only code runs on the loop thread (once run() started).
  void assert_in_loop_thread() const {
    assert(loop_thread_ == std::thread::id() || loop_thread_ == std::this_thread::get_id());
  }

  void begin_shutdown();
  void force_close_all();
  void finish_shutdown();
  void log_stats();
  ServerStats snapshot();

  const ServerOptions options_;
  uv_loop_t loop_;
  std::unique_ptr<LoopExecutor> executor_;
  std::unique_ptr<HashedWheelTimer> timer_;  // after executor_: it posts there
  uv_tcp_t listener_;
  bool listening_ = false;
  uv_signal_t sigint_, sigterm_;
  bool signals_ = false;
  uv_timer_t stats_timer_;
  uv_timer_t force_close_timer_;
  uv_async_t shutdown_async_;
  std::mutex shutdown_mutex_;
  bool shutdown_async_open_ = false;  // guarded by shutdown_mutex_
  std::atomic<std::uint16_t> port_{0};

  std::thread::id loop_thread_;  // set by run()
  bool shutting_down_ = false;
  bool finished_ = false;
  // The connection table: slot -> connection, until its close callback. A connection id is
  // (generation << 32 | slot) with a 30-bit generation, so an id from a timeout of a closed
  // connection does not match the connection that reuses the slot (unless 2^30 connections
  // came and went in between, while that job waited: never in practice).
  std::vector<Connection*> slots_;
  std::vector<std::uint32_t> free_slots_;
  static constexpr std::uint32_t kGenerationMask = (1u << 30) - 1;
  std::uint32_t generation_ = 0;
  std::size_t allocated_ = 0;  // Connection objects alive, closing ones included

  std::unique_ptr<char[]> read_buffer_;
  std::string reply_;
  ServerStats stats_;
  std::uint64_t last_accept_error_log_ms_ = 0;
};

}  // namespace wheel::net
