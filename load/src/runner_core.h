// SPDX-License-Identifier: Apache-2.0
// Internal to wheel-load's library: RunnerCore, one process's share of a run on one libuv loop
// (the implementation of LoadRunner). Its methods live in four files, one per seam:
//   runner_core.cc     set-up, the loop's timers, progress, the end of the run and the final tally
//   runner_connect.cc  opening the long-lived connections at the configured rate
//   runner_lines.cc    each connection's turn (PING, DELAY, burst, garbage) and what comes back
//   runner_churn.cc    the churn slots' connect / PING / QUIT cycles
// Threads: everything runs on the thread that calls run().
#pragma once

#include <uv.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "connection.h"
#include "wheel/load/load_config.h"
#include "wheel/load/load_result.h"
#include "wheel/load/ping_ring.h"
#include "wheel/load/progress.h"
#include "wheel/net/line_framer.h"

namespace wheel::load {

class RunnerCore {
 public:
  RunnerCore(LoadConfig config, ProgressCallback on_progress, int stop_fd);

  // See LoadRunner::run.
  LoadResult run();

  // The longest line wheel-load accepts from the server.
  static constexpr std::size_t kMaxLine = 4096;

 private:
  // --- runner_core.cc: the run's clock, timers, progress and end
  double now_ms() const { return static_cast<double>(uv_hrtime() - start_ns_) / 1e6; }
  std::array<uv_timer_t*, 7> all_timers();
  std::uint64_t mix_failures() const;
  Progress progress() const;
  static void on_progress_tick(uv_timer_t* t);
  static void on_end(uv_timer_t* t);
  void end();
  void judge_pending_delays(Connection& c);
  static void on_grace_over(uv_timer_t* t);
  void finish();
  void close_handle(Connection& c);
  static void on_stop(uv_poll_t* p, int status, int events);
  void server_shutting_down(Connection& c);

  // --- runner_connect.cc: opening connections
  static void on_connect_tick(uv_timer_t* t);
  void open(std::size_t local);
  int start_connect(Connection& c, std::size_t address_index);
  void connect_failed(Connection& c, int err);
  void count_connect_error(Connection& c, const char* kind);
  static void on_connect(uv_connect_t* req, int status);
  void start_reading(Connection& c);
  void maybe_give_up();

  // --- runner_lines.cc: each connection's turn and the server's lines
  static void on_ping_tick(uv_timer_t* t);
  void act(Connection& c);
  static void on_slow_read_tick(uv_timer_t* t);
  static void on_alloc(uv_handle_t* h, std::size_t, uv_buf_t* buf);
  static void on_read(uv_stream_t* s, ssize_t nread, const uv_buf_t* buf);
  void on_line(Connection& c, std::string_view line);
  void delivered(Connection& c, std::string_view token);
  void unexpected_line(std::string_view line);
  double close_arrival_ms(Connection& c, double now) const;
  void server_closed(Connection& c, int err);
  void judge_idle_close(Connection& c, double now);
  void send_line(Connection& c, std::string_view text);
  void send_owned(Connection& c, std::string text);

  // --- runner_churn.cc: short connections, cycle after cycle
  static void on_churn_tick(uv_timer_t* t);
  void churn_failed(Connection& c, std::string_view why);
  void churn_connected(Connection& c, int status);
  void churn_ponged(Connection& c);
  void churn_closed(Connection& c, int err);
  static void on_churn_slot_free(uv_handle_t* h);
  void end_churn();

  static constexpr std::chrono::milliseconds kPingTick{10};

  LoadConfig cfg_;
  ProgressCallback on_progress_;
  std::mt19937_64 rng_;
  uv_loop_t loop_{};
  uv_timer_t connect_timer_{}, ping_timer_{}, progress_timer_{}, end_timer_{}, grace_timer_{};
  uv_timer_t slow_read_timer_{}, churn_timer_{};
  int stop_fd_ = -1;
  uv_poll_t stop_poll_{};  // watches stop_fd_ when it is not -1
  std::unique_ptr<Connection[]> conns_;
  std::unique_ptr<Connection[]> churn_;  // cfg_.churn slots (at least one, unused when 0)
  std::vector<std::uint32_t> slow_ids_;  // local indices of the established slow readers
  std::string slow_burst_text_;          // "PING\n" * slow_burst
  std::size_t next_to_open_ = 0;
  PingRing pings_{cfg_.ping_interval, kPingTick};
  std::uint64_t start_ns_ = 0;
  double last_progress_ms_ = 0;
  std::uint64_t active_open_ = 0;
  std::uint64_t idle_open_ = 0;
  std::uint64_t closed_by_server_ = 0;
  std::uint64_t quitting_ = 0;
  std::uint64_t connecting_ = 0;  // connects started whose on_connect has not run
  double first_failure_ms_ = -1;  // the first connect failure (for giving up), or -1
  bool ending_ = false;
  bool finished_ = false;
  LoadResult result_;
  char read_buffer_[64 * 1024];
  const wheel::net::LineFramer framer_{kMaxLine};  // shared with net/ and the line server
};

// The connection a libuv handle or request belongs to (its data pointer).
template <typename T>
Connection& conn_of(T* handle_or_req) {
  return *static_cast<Connection*>(handle_or_req->data);
}

}  // namespace wheel::load
