// SPDX-License-Identifier: Apache-2.0
// RunnerCore: the churn slots. Each slot runs cycles of connect, PING, PONG, then QUIT and the
// server's close (every 4th cycle: an abortive close, RST), at most churn_rate cycles a second.
#include <spdlog/spdlog.h>
#include "runner_core.h"

#include "wheel/logger.h"

namespace wheel::load {

// Starts cycles on free slots, at most churn_rate per second since the start.
void RunnerCore::on_churn_tick(uv_timer_t* t) {
  auto* self = static_cast<RunnerCore*>(t->data);
  const auto due = static_cast<std::uint64_t>(self->now_ms() / 1000.0 * self->cfg_.churn_rate) + 1;
  for (std::size_t i = 0; i < self->cfg_.churn && self->result_.churn_started < due; ++i) {
    Connection& c = self->churn_[i];
    if (c.state != ConnState::kNotStarted) continue;
    c.runner = self;
    c.churn = true;
    c.role = Role::kPing;
    c.ponged = false;
    c.local_index = static_cast<std::uint32_t>(i);
    ++self->result_.churn_started;
    if (int e = self->start_connect(c, i + self->result_.churn_started)) {
      self->churn_failed(c, uv_err_name(e));
    }
  }
}

void RunnerCore::churn_failed(Connection& c, std::string_view why) {
  if (result_.churn_failed++ < 5) wheel::logger()->warn("wheel-load: churn cycle failed: {}", why);
  c.state = ConnState::kClosed;
  close_handle(c);
  maybe_give_up();
}

void RunnerCore::churn_connected(Connection& c, int status) {
  if (status < 0) return churn_failed(c, uv_err_name(status));
  ++result_.churn_established;
  c.state = ConnState::kOpen;
  start_reading(c);
  ++result_.pings_sent;
  send_line(c, "PING\n");
}

// The cycle's PONG: every 4th cycle aborts (RST), the others QUIT and wait for the close.
void RunnerCore::churn_ponged(Connection& c) {
  if (c.state != ConnState::kOpen || c.ponged) return unexpected_line("PONG");
  c.ponged = true;
  if (c.churn_cycle % 4 == 3) {
    ++result_.churn_completed;
    c.state = ConnState::kClosed;
    c.handle_open = false;
    if (uv_tcp_close_reset(&c.tcp, &on_churn_slot_free) != 0) {
      uv_close(reinterpret_cast<uv_handle_t*>(&c.tcp), &on_churn_slot_free);
    }
    return;
  }
  c.state = ConnState::kQuitting;
  send_line(c, "QUIT\n");
}

void RunnerCore::churn_closed(Connection& c, int err) {
  if (c.state == ConnState::kQuitting && err == 0) {
    ++result_.churn_completed;
    c.state = ConnState::kClosed;
    close_handle(c);
  } else if (c.bye_shutdown || result_.server_shutdown_at_s >= 0) {
    ++result_.churn_interrupted;  // cut off by the server's shutdown, not a failed cycle
    c.state = ConnState::kClosed;
    close_handle(c);
  } else if (c.state == ConnState::kOpen || c.state == ConnState::kQuitting) {
    churn_failed(c, err != 0 ? uv_err_name(err) : "closed by the server before QUIT");
  }
}

void RunnerCore::on_churn_slot_free(uv_handle_t* h) {
  Connection& c = conn_of(h);
  ++c.churn_cycle;
  if (!c.runner->ending_) c.state = ConnState::kNotStarted;
}

// The end of the run: a cycle under way is interrupted, not failed.
void RunnerCore::end_churn() {
  for (std::size_t i = 0; i < cfg_.churn; ++i) {
    Connection& c = churn_[i];
    if (c.state == ConnState::kConnecting || c.state == ConnState::kOpen ||
        c.state == ConnState::kQuitting) {
      ++result_.churn_interrupted;
      c.state = ConnState::kClosed;
      close_handle(c);
    }
  }
}

}  // namespace wheel::load
