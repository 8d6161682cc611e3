// SPDX-License-Identifier: Apache-2.0
#include "line_protocol_handler.h"

#include <spdlog/spdlog.h>

#include <unistd.h>
#include "wheel/logger.h"

#include <algorithm>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "line_protocol.h"

namespace wheel::server {

struct LineProtocolHandler::Pending {
  // The pending DELAYs' handles from `first` on, in the order scheduled (those before `first`
  // ran). They mostly run in that order, so the one that runs is timeouts[first]: found at once
  // (a search from the front was the top of a burst's profile, O(n) per line).
  std::vector<net::LoopTimer::Handle> timeouts;
  std::size_t first = 0;
  std::size_t bytes = 0;     // text of the pending DELAYs
  bool input_ended = false;  // the client sends no more: close after the last DELAY

  std::size_t count() const { return timeouts.size() - first; }
  // Forgets `h`; false if it is not pending here.
  bool remove(net::LoopTimer::Handle h) {
    if (first < timeouts.size() && timeouts[first] == h) {
      ++first;
    } else {
      const auto it =
          std::find(timeouts.begin() + static_cast<std::ptrdiff_t>(first), timeouts.end(), h);
      if (it == timeouts.end()) return false;
      timeouts.erase(it);  // keeps the order: rare
    }
    if (first * 2 >= timeouts.size()) {  // the ran ones are half: drop them (amortised O(1))
      timeouts.erase(timeouts.begin(), timeouts.begin() + static_cast<std::ptrdiff_t>(first));
      first = 0;
    }
    return true;
  }
};

// Names its connection by id: harmless if that connection closed before the job ran.
struct LineProtocolHandler::DelayedTask {
  LineProtocolHandler* handler;
  std::uint64_t id;
  std::string text;
  void operator()(net::LoopTimer::Handle self) const { handler->on_delayed(id, self, text); }
};

LineProtocolHandler::LineProtocolHandler(int worker_index, std::chrono::milliseconds stats_interval,
                                         DelayLimits delay_limits, ServerMetricsSlot* metrics)
    : worker_index_(worker_index),
      stats_interval_(stats_interval),
      delay_limits_(delay_limits),
      metrics_(metrics) {}

void LineProtocolHandler::attach(net::TcpServer& server) {
  server_ = &server;
  if (metrics_ != nullptr) {
    int rc = uv_check_init(server.loop(), &publish_check_);
    if (rc != 0) throw std::system_error(-rc, std::generic_category(), "uv_check_init");
    publish_check_.data = this;
    publish_check_open_ = true;
    rc = uv_check_start(&publish_check_, [](uv_check_t* check) {
      static_cast<const LineProtocolHandler*>(check->data)->publish_metrics();
    });
    if (rc != 0) throw std::system_error(-rc, std::generic_category(), "uv_check_start");
    uv_unref(reinterpret_cast<uv_handle_t*>(&publish_check_));  // never keeps the loop alive
    rc = uv_timer_init(server.loop(), &publish_timer_);
    if (rc != 0) throw std::system_error(-rc, std::generic_category(), "uv_timer_init");
    publish_timer_.data = this;
    publish_timer_open_ = true;
    rc = uv_timer_start(
        &publish_timer_,
        [](uv_timer_t* t) { static_cast<const LineProtocolHandler*>(t->data)->publish_metrics(); },
        1000, 1000);
    if (rc != 0) throw std::system_error(-rc, std::generic_category(), "uv_timer_start");
    uv_unref(reinterpret_cast<uv_handle_t*>(&publish_timer_));
  }
  if (stats_interval_.count() <= 0) return;
  int rc = uv_timer_init(server.loop(), &stats_timer_);
  if (rc != 0) throw std::system_error(-rc, std::generic_category(), "uv_timer_init");
  stats_timer_.data = this;
  stats_timer_open_ = true;
  const auto every = static_cast<std::uint64_t>(stats_interval_.count());
  rc = uv_timer_start(
      &stats_timer_,
      [](uv_timer_t* t) { static_cast<const LineProtocolHandler*>(t->data)->log_stats(); }, every,
      every);
  if (rc != 0) throw std::system_error(-rc, std::generic_category(), "uv_timer_start");
}

ServerStats LineProtocolHandler::snapshot() const {
  ServerStats s;
  if (server_ != nullptr) static_cast<net::TcpServerCounters&>(s) = server_->counters();
  s.worker = worker_index_;
  s.pid = static_cast<std::int64_t>(::getpid());
  s.idle_closed = idle_closed_;
  s.pings = pings_;
  s.heartbeats = heartbeats_;
  s.delayed_pending = delayed_pending_;
  s.delayed_sent = delayed_sent_;
  s.delayed_bytes = delayed_bytes_;
  s.delayed_refused = delayed_refused_;
  s.errors = errors_;
  s.stale_timeouts += stale_delayed_;
  return s;
}

void LineProtocolHandler::publish_metrics() const {
  if (metrics_ == nullptr || server_ == nullptr) return;
  const ServerStats s = snapshot();
  // The histograms are not published: they are observed in the slot itself.
  metrics_->publish({.connections_open = s.connections,
                     .delayed_pending = s.delayed_pending,
                     .timer_pending_timeouts = server_->timer().pending_timeouts(),
                     .accepted = s.accepted,
                     .rejected_full = s.rejected_full,
                     .rejected_emfile = s.rejected_emfile,
                     .closed = closed_,
                     .heartbeats_sent = s.heartbeats,
                     .pings = s.pings,
                     .delayed_sent = s.delayed_sent,
                     .bytes_received = s.bytes_in,
                     .bytes_sent = s.bytes_out,
                     .idle_close_lateness = {},
                     .tick_lag = {}});
}

void LineProtocolHandler::observe_idle_close(const net::Connection& c, net::IdleKind kind) {
  if (metrics_ == nullptr) return;
  // On the detector's own clock (the loop's, in ms): the time past last activity + idle time.
  const net::IdleTimes& idle = server_->options().idle;
  const net::IdleWatch& w = c.idle();
  const std::uint64_t last = kind == net::IdleKind::kReader
                                 ? w.last_read_ms()
                                 : std::max(w.last_read_ms(), w.last_write_ms());
  const auto idle_ms = static_cast<std::uint64_t>((kind == net::IdleKind::kReader ? idle.reader
                                                   : kind == net::IdleKind::kAll  ? idle.all
                                                                                  : idle.writer)
                                                      .count());
  const std::uint64_t now = uv_now(server_->loop());
  const std::uint64_t due = last + idle_ms;
  metrics_->idle_close_lateness.observe(
      std::chrono::milliseconds(now > due ? static_cast<std::int64_t>(now - due) : 0));
}

void LineProtocolHandler::log_stats() const {
  if (stats_logger_) {
    stats_logger_(snapshot(), server_->timer().pending_timeouts());
    return;
  }
  wheel::logger()->info("worker {}: stats {} pending_timeouts={}", worker_index_,
                        snapshot().to_log_string(), server_->timer().pending_timeouts());
}

void LineProtocolHandler::on_line(net::Connection& c, std::string_view line) {
  const Command cmd = parse_stripped_command(line);
  switch (cmd.kind) {
    case Command::kEmpty:
    case Command::kPong:
      break;  // activity only, already recorded
    case Command::kPing:
      ++pings_;
      c.send("PONG\n");
      break;
    case Command::kStats:
      c.send("STATS " + snapshot().to_json() + "\n");
      break;
    case Command::kQuit:
      c.close_with("BYE\n", net::CloseReason::kQuit);
      break;
    case Command::kDelay:
      schedule_delayed(c, cmd.delay_ms, cmd.text);
      break;
    case Command::kBadDelay:
      ++errors_;
      c.send("ERR bad delay\n");
      break;
    case Command::kUnknown:
      ++errors_;
      c.send("ERR unknown command\n");
      break;
  }
  // Pipelined requests cannot queue more than half of max_output: past it the rest of the read
  // waits, unread, until the client took half of that (on_output_below). So a client that
  // pipelines STATS and reads slowly is served, not closed; one that never reads just sits.
  if (server_ == nullptr || c.closing()) return;
  const std::size_t max_output = server_->options().max_output;
  if (c.queued_output() >= max_output / 2) {
    c.pause_input();
    c.notify_output_below(max_output / 4);
  }
}

void LineProtocolHandler::on_output_below(net::Connection& c) {
  c.resume_input();
}

void LineProtocolHandler::on_line_too_long(net::Connection& c) {
  ++errors_;
  c.close_with("ERR line too long\n", net::CloseReason::kLineTooLong);
}

void LineProtocolHandler::on_input_end(net::Connection& c) {
  // Every request read has been answered but the DELAYs still pending: they were promised.
  auto* pending = static_cast<Pending*>(c.context());
  if (pending != nullptr && pending->count() != 0) {
    pending->input_ended = true;
    return;
  }
  c.close(net::CloseReason::kPeerClosed);  // after the replies queued
}

void LineProtocolHandler::on_idle(net::Connection& c, net::IdleEvent event) {
  if (event.kind == net::IdleKind::kWriter) {
    ++heartbeats_;
    c.send("PING\n");  // a server heartbeat; records write activity
    return;
  }
  ++idle_closed_;
  wheel::logger()->debug("worker {}: connection {:#x} {}-idle, closing", worker_index_, c.id(),
                         to_string(event.kind));
  observe_idle_close(c, event.kind);
  c.close_with("BYE idle\n", event.kind == net::IdleKind::kReader ? net::CloseReason::kReaderIdle
                                                                  : net::CloseReason::kAllIdle);
}

void LineProtocolHandler::on_close(net::Connection& c, net::CloseReason reason) {
  ++closed_[static_cast<std::size_t>(reason)];
  auto* pending = static_cast<Pending*>(c.context());
  if (pending == nullptr) return;
  for (std::size_t i = pending->first; i < pending->timeouts.size(); ++i) {
    server_->timer().cancel(pending->timeouts[i]);
  }
  delayed_pending_ -= pending->count();
  delayed_bytes_ -= pending->bytes;
  delete pending;
  c.set_context(nullptr);
}

void LineProtocolHandler::on_shutdown() {
  if (shutdown_hook_) std::exchange(shutdown_hook_, nullptr)();
  if (publish_check_open_) {
    publish_check_open_ = false;
    publish_metrics();
    uv_close(reinterpret_cast<uv_handle_t*>(&publish_check_), nullptr);
  }
  if (publish_timer_open_) {
    publish_timer_open_ = false;
    uv_close(reinterpret_cast<uv_handle_t*>(&publish_timer_), nullptr);
  }
  if (!stats_timer_open_) return;
  stats_timer_open_ = false;
  uv_close(reinterpret_cast<uv_handle_t*>(&stats_timer_), nullptr);
}

void LineProtocolHandler::schedule_delayed(net::Connection& c, std::uint64_t delay_ms,
                                           std::string_view text) {
  auto* pending = static_cast<Pending*>(c.context());
  if (pending == nullptr) {
    pending = new Pending;
    c.set_context(pending);
  }
  if (pending->count() >= delay_limits_.count_per_connection) {
    return refuse_delay(c, "ERR too many delayed messages\n");
  }
  // Sizes of objects in memory: neither sum can overflow.
  if (pending->bytes + text.size() > delay_limits_.bytes_per_connection ||
      delayed_bytes_ + text.size() > delay_limits_.bytes_per_worker) {
    return refuse_delay(c, "ERR delayed bytes limit\n");
  }
  // The job runs on this (the loop) thread, so it cannot fire before push_back below.
  pending->timeouts.push_back(server_->timer().new_timeout(
      DelayedTask{this, c.id(), std::string(text)}, std::chrono::milliseconds(delay_ms)));
  ++delayed_pending_;
  pending->bytes += text.size();
  delayed_bytes_ += text.size();
  c.send("OK\n");
}

void LineProtocolHandler::refuse_delay(net::Connection& c, std::string_view why) {
  ++errors_;
  ++delayed_refused_;
  c.send(why);
}

void LineProtocolHandler::on_delayed(std::uint64_t id, net::LoopTimer::Handle fired,
                                     std::string_view text) {
  net::Connection* c = server_->find(id);
  auto* pending = c == nullptr ? nullptr : static_cast<Pending*>(c->context());
  if (pending == nullptr) {  // closed meanwhile: its count is already gone
    ++stale_delayed_;
    return;
  }
  if (!pending->remove(fired)) return;
  pending->bytes -= text.size();
  delayed_bytes_ -= text.size();
  --delayed_pending_;
  ++delayed_sent_;
  std::string message;
  message.reserve(text.size() + 9);
  message.append("DELAYED ").append(text).append("\n");
  c->send(message);
  if (pending->input_ended && pending->count() == 0) {
    c->close(net::CloseReason::kPeerClosed);  // it ended its input; now it has everything
  }
}

}  // namespace wheel::server
