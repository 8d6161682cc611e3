// SPDX-License-Identifier: Apache-2.0
// RunnerCore: set-up, the loop's timers, progress, the end of the run and the final tally.
#include "runner_core.h"

#include <algorithm>
#include <cassert>
#include <stdexcept>

#include <unistd.h>

#include <spdlog/spdlog.h>

#include "wheel/logger.h"

namespace wheel::load {
namespace {

constexpr std::uint64_t kConnectTickMs = 5;
constexpr std::uint64_t kQuitGraceMs = 1000;
// Slow readers read at most once per this many ms (runner_lines.cc sizes each read).
constexpr std::uint64_t kSlowReadEveryMs = 50;

}  // namespace

RunnerCore::RunnerCore(LoadConfig config, ProgressCallback on_progress, int stop_fd)
    : cfg_(std::move(config)),
      on_progress_(std::move(on_progress)),
      rng_(cfg_.seed),
      stop_fd_(stop_fd) {}

LoadResult RunnerCore::run() {
  if (int e = uv_loop_init(&loop_)) {
    throw std::runtime_error(std::string("uv_loop_init: ") + uv_err_name(e));
  }
  conns_ = std::make_unique<Connection[]>(cfg_.share);
  result_.connections_requested = cfg_.share;
  result_.processes = cfg_.processes;
  churn_ = std::make_unique<Connection[]>(std::max<std::size_t>(cfg_.churn, 1));
  for (std::size_t i = 0; i < cfg_.slow_burst; ++i) slow_burst_text_ += "PING\n";
  for (uv_timer_t* t : all_timers()) {
    uv_timer_init(&loop_, t);
    t->data = this;
  }
  if (stop_fd_ >= 0) {
    if (int e = uv_poll_init(&loop_, &stop_poll_, stop_fd_)) {
      throw std::runtime_error(std::string("uv_poll_init: ") + uv_err_name(e));
    }
    stop_poll_.data = this;
    uv_poll_start(&stop_poll_, UV_READABLE, &RunnerCore::on_stop);
  }
  start_ns_ = uv_hrtime();
  uv_timer_start(&connect_timer_, &RunnerCore::on_connect_tick, 0, kConnectTickMs);
  uv_timer_start(&ping_timer_, &RunnerCore::on_ping_tick, kPingTick.count(), kPingTick.count());
  uv_timer_start(&progress_timer_, &RunnerCore::on_progress_tick, 1000, 1000);
  uv_timer_start(&end_timer_, &RunnerCore::on_end, cfg_.duration.count(), 0);
  if (cfg_.slow_share > 0) {
    uv_timer_start(&slow_read_timer_, &RunnerCore::on_slow_read_tick, kSlowReadEveryMs,
                   kSlowReadEveryMs);
  }
  if (cfg_.churn > 0 && cfg_.churn_rate > 0) {
    uv_timer_start(&churn_timer_, &RunnerCore::on_churn_tick, 0, kConnectTickMs);
  }
  uv_run(&loop_, UV_RUN_DEFAULT);
  if (uv_loop_close(&loop_) != 0) {
    wheel::logger()->error(
        "wheel-load: loop still had handles at the end");  // a bug, not a load fact
  }
  return std::move(result_);
}

std::array<uv_timer_t*, 7> RunnerCore::all_timers() {
  return {&connect_timer_, &ping_timer_,      &progress_timer_, &end_timer_,
          &grace_timer_,   &slow_read_timer_, &churn_timer_};
}

std::uint64_t RunnerCore::mix_failures() const {
  const LoadResult& r = result_;
  return r.delayed_early + r.delayed_late + r.churn_failed + r.unexpected_lines;
}

Progress RunnerCore::progress() const {
  Progress p;
  p.elapsed_s = now_ms() / 1000.0;
  p.requested = cfg_.share;
  p.connected = result_.connections_established;
  p.active_open = active_open_;
  p.idle_open = idle_open_;
  p.closed = closed_by_server_;
  p.errors = result_.connect_errors + result_.io_errors;
  p.churn_cycles = result_.churn_completed;
  p.mix_failures = mix_failures();
  return p;
}

void RunnerCore::on_progress_tick(uv_timer_t* t) {
  auto* self = static_cast<RunnerCore*>(t->data);
  const double now = self->now_ms();
  self->result_.max_loop_stall_ms =
      std::max(self->result_.max_loop_stall_ms, now - self->last_progress_ms_ - 1000);
  self->last_progress_ms_ = now;
  if (self->on_progress_) self->on_progress_(self->progress());
}

void RunnerCore::on_end(uv_timer_t* t) {
  static_cast<RunnerCore*>(t->data)->end();
}

// A signal asked the run to stop: it ends now, as at the end of --duration.
void RunnerCore::on_stop(uv_poll_t* p, int, int) {
  auto* self = static_cast<RunnerCore*>(p->data);
  unsigned char sig = 0;
  if (::read(self->stop_fd_, &sig, 1) == 1 && self->result_.interrupted_by == 0) {
    self->result_.interrupted_by = sig;
  }
  if (self->result_.interrupted_by == 0) return;  // a spurious wake-up
  uv_poll_stop(p);
  wheel::logger()->warn("wheel-load: interrupted by signal {} after {:.1f} s: ending the run",
                        self->result_.interrupted_by, self->now_ms() / 1000.0);
  if (self->ending_) {
    self->finish();  // already in the QUIT grace: cut it short
  } else {
    self->end();
  }
}

// The first "BYE shutdown": the server is going away, so nothing more can be measured. New
// work stops now and the run ends after a short grace in which the server closes the rest;
// every close from now on is counted as the shutdown's, not judged as early.
void RunnerCore::server_shutting_down(Connection& c) {
  c.bye_shutdown = true;
  if (result_.server_shutdown_at_s >= 0 || ending_) return;
  result_.server_shutdown_at_s = now_ms() / 1000.0;
  wheel::logger()->warn(
      "wheel-load: the server is shutting down (BYE shutdown after {:.1f} s): "
      "ending the run",
      result_.server_shutdown_at_s);
  uv_timer_stop(&connect_timer_);
  uv_timer_stop(&churn_timer_);
  uv_timer_start(&end_timer_, &RunnerCore::on_end, kQuitGraceMs, 0);
}

void RunnerCore::close_handle(Connection& c) {
  if (!c.handle_open) {
    if (c.churn && c.state == ConnState::kClosed) c.state = ConnState::kNotStarted;
    return;
  }
  c.handle_open = false;
  uv_close(reinterpret_cast<uv_handle_t*>(&c.tcp), c.churn ? &on_churn_slot_free : nullptr);
}

// Stops everything that starts new work, then settles every connection: active ones get QUIT
// and a grace to answer BYE, idle ones are closed and judged as never closed or not yet due.
void RunnerCore::end() {
  ending_ = true;
  result_.duration_s = now_ms() / 1000.0;
  uv_timer_stop(&connect_timer_);
  uv_timer_stop(&ping_timer_);
  uv_timer_stop(&slow_read_timer_);
  uv_timer_stop(&churn_timer_);
  const double now = now_ms();
  end_churn();
  if (next_to_open_ < cfg_.share) {
    const auto n = cfg_.share - next_to_open_;
    result_.connect_errors += n;
    // Not opened: the run ended first, or stopped early (LoadResult says why).
    const char* why = result_.server_shutdown_at_s >= 0 ? "server_shut_down"
                      : !result_.gave_up.empty()        ? "gave_up"
                      : result_.interrupted_by != 0     ? "interrupted"
                                                        : "not_started";
    result_.connect_errors_by_kind[why] += n;
    wheel::logger()->warn("wheel-load: {} connections were not opened ({})", n, why);
  }
  for (std::size_t i = 0; i < next_to_open_; ++i) {
    Connection& c = conns_[i];
    switch (c.state) {
      case ConnState::kConnecting:
        count_connect_error(c, "pending_at_end");
        break;
      case ConnState::kOpen:
        if (c.active) {
          --active_open_;
          ++result_.active_survived;
          c.state = ConnState::kQuitting;
          ++quitting_;
          send_line(c, "QUIT\n");
          if (c.role == Role::kSlowReader) start_reading(c);  // read the rest at full speed
        } else {
          --idle_open_;
          // A close not yet due when the run ends is no failure: it is reported apart.
          const double due =
              c.connect_ms + static_cast<double>((cfg_.expect_idle_close + cfg_.tolerance).count());
          if (cfg_.expect_idle_close.count() > 0 && now < due) {
            ++result_.idle_not_yet_due;
          } else {
            ++result_.idle_never_closed;
          }
          c.state = ConnState::kClosed;
          close_handle(c);
        }
        break;
      default:
        break;
    }
  }
  if (quitting_ == 0) {
    finish();
  } else {
    uv_timer_start(&grace_timer_, &RunnerCore::on_grace_over, kQuitGraceMs, 0);
  }
}

// When c closes (its DELAYs die with it): a DELAY whose delivery was due by now, or by the end
// of the run once the run is ending, is missing; the others were not yet due.
void RunnerCore::judge_pending_delays(Connection& c) {
  const double now = ending_ ? result_.duration_s * 1000.0 : now_ms();
  for (const PendingDelay& d : c.delays) {
    const double due = d.sent_ms + static_cast<double>((cfg_.delay + cfg_.tolerance).count());
    if (now < due) {
      ++result_.delayed_not_yet_due;
    } else {
      ++result_.delayed_missing;
    }
  }
  c.delays.clear();
}

// The QUIT grace is over: whatever did not answer BYE is closed by us, without blame.
void RunnerCore::on_grace_over(uv_timer_t* t) {
  static_cast<RunnerCore*>(t->data)->finish();
}

void RunnerCore::finish() {
  if (finished_) return;
  finished_ = true;
  // Every connection lands in exactly one bucket of the report.
  assert(result_.connections_established + result_.connect_errors == cfg_.share);
  assert(result_.active_count ==
         result_.active_survived + result_.active_closed_early + result_.active_closed_by_shutdown);
  assert(result_.idle_count == result_.idle_closed_on_time + result_.idle_closed_early +
                                   result_.idle_closed_late + result_.idle_never_closed +
                                   result_.idle_not_yet_due + result_.idle_closed_by_shutdown);
  for (std::size_t i = 0; i < next_to_open_; ++i) {
    judge_pending_delays(conns_[i]);
    conns_[i].state = ConnState::kClosed;
    close_handle(conns_[i]);
  }
  assert(result_.delays_sent == result_.delayed_on_time + result_.delayed_early +
                                    result_.delayed_late + result_.delayed_missing +
                                    result_.delayed_not_yet_due);
  assert(result_.churn_started ==
         result_.churn_completed + result_.churn_failed + result_.churn_interrupted);
  quitting_ = 0;
  for (uv_timer_t* t : all_timers()) uv_close(reinterpret_cast<uv_handle_t*>(t), nullptr);
  if (stop_fd_ >= 0) uv_close(reinterpret_cast<uv_handle_t*>(&stop_poll_), nullptr);
}

}  // namespace wheel::load
