// SPDX-License-Identifier: Apache-2.0
#include "line_protocol_handler.h"

#include <spdlog/spdlog.h>

#include <unistd.h>
#include "wheel/logger.h"

#include <algorithm>
#include <string>
#include <system_error>
#include <vector>

#include "line_protocol.h"

namespace wheel::net {

struct LineProtocolHandler::Pending {
  std::vector<TimeoutHandle> timeouts;
  std::size_t bytes = 0;  // text of `timeouts`
};

// Names its connection by id: harmless if that connection closed before the job ran.
struct LineProtocolHandler::DelayedTask {
  LineProtocolHandler* handler;
  std::uint64_t id;
  std::string text;
  void operator()(Timeout& self) const { handler->on_delayed(id, &self, text); }
};

LineProtocolHandler::LineProtocolHandler(int worker_index, std::chrono::milliseconds stats_interval,
                                         DelayLimits delay_limits)
    : worker_index_(worker_index), stats_interval_(stats_interval), delay_limits_(delay_limits) {}

void LineProtocolHandler::attach(TcpServer& server) {
  server_ = &server;
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
  s.worker = worker_index_;
  s.pid = static_cast<std::int64_t>(::getpid());
  if (server_ != nullptr) {
    const TcpServerCounters c = server_->counters();
    s.connections = c.connections;
    s.accepted = c.accepted;
    s.rejected_full = c.rejected_full;
    s.rejected_emfile = c.rejected_emfile;
    s.accept_errors = c.accept_errors;
    s.slow_consumers = c.slow_consumers;
    s.stale_timeouts = c.stale_timeouts;
    s.bytes_in = c.bytes_in;
    s.bytes_out = c.bytes_out;
  }
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

void LineProtocolHandler::log_stats() const {
  wheel::logger()->info("worker {}: stats {} pending_timeouts={}", worker_index_,
                        snapshot().to_log_string(), server_->timer().pending_timeouts());
}

void LineProtocolHandler::on_line(Connection& c, std::string_view line) {
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
      c.close_with("BYE\n");
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
}

void LineProtocolHandler::on_line_too_long(Connection& c) {
  ++errors_;
  c.close_with("ERR line too long\n");
}

void LineProtocolHandler::on_idle(Connection& c, IdleEvent event) {
  if (event.kind == IdleKind::kWriter) {
    ++heartbeats_;
    c.send("PING\n");  // a server heartbeat; records write activity
    return;
  }
  ++idle_closed_;
  wheel::logger()->debug("worker {}: connection {:#x} {}-idle, closing", worker_index_, c.id(),
                         to_string(event.kind));
  c.close_with("BYE idle\n");
}

void LineProtocolHandler::on_close(Connection& c, CloseReason) {
  auto* pending = static_cast<Pending*>(c.context());
  if (pending == nullptr) return;
  for (TimeoutHandle& h : pending->timeouts) server_->timer().cancel(h);
  delayed_pending_ -= pending->timeouts.size();
  delayed_bytes_ -= pending->bytes;
  delete pending;
  c.set_context(nullptr);
}

void LineProtocolHandler::on_shutdown() {
  if (!stats_timer_open_) return;
  stats_timer_open_ = false;
  uv_close(reinterpret_cast<uv_handle_t*>(&stats_timer_), nullptr);
}

void LineProtocolHandler::schedule_delayed(Connection& c, std::uint64_t delay_ms,
                                           std::string_view text) {
  auto* pending = static_cast<Pending*>(c.context());
  if (pending == nullptr) {
    pending = new Pending;
    c.set_context(pending);
  }
  if (pending->timeouts.size() >= delay_limits_.count_per_connection) {
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

void LineProtocolHandler::refuse_delay(Connection& c, std::string_view why) {
  ++errors_;
  ++delayed_refused_;
  c.send(why);
}

void LineProtocolHandler::on_delayed(std::uint64_t id, const Timeout* fired,
                                     std::string_view text) {
  Connection* c = server_->find(id);
  auto* pending = c == nullptr ? nullptr : static_cast<Pending*>(c->context());
  if (pending == nullptr) {  // closed meanwhile: its count is already gone
    ++stale_delayed_;
    return;
  }
  auto& timeouts = pending->timeouts;
  const auto it = std::find_if(timeouts.begin(), timeouts.end(),
                               [fired](const TimeoutHandle& h) { return h.get() == fired; });
  if (it == timeouts.end()) return;
  *it = std::move(timeouts.back());
  timeouts.pop_back();
  pending->bytes -= text.size();
  delayed_bytes_ -= text.size();
  --delayed_pending_;
  ++delayed_sent_;
  std::string message;
  message.reserve(text.size() + 9);
  message.append("DELAYED ").append(text).append("\n");
  c->send(message);
}

}  // namespace wheel::net
