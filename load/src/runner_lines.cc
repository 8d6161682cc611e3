// SPDX-License-Identifier: Apache-2.0
// RunnerCore: each active connection's turn (PING, DELAY, a slow reader's burst, an unknown
// command), the lines the server sends back, and the server's closes, judged.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <string>

#include <spdlog/spdlog.h>
#include "runner_core.h"
#include "wheel/load/idle_close.h"

#include "wheel/logger.h"

namespace wheel::load {
namespace {

// Slow readers read at most this much per read (runner_core.cc paces the reads): ~5 KB/s each.
constexpr std::size_t kSlowReadBytes = 256;
// A DELAY connection has at most this many messages in flight; it skips a turn when full.
constexpr std::size_t kMaxDelaysInFlight = 64;
// Unknown commands the garbage senders send, in turn: each must get "ERR unknown command".
constexpr std::string_view kGarbageLines[] = {"HELLO there\n", "ping\n", "GET / HTTP/1.0\n",
                                              "PINGPONG\n", "\x01\x7f\xfe binary\n"};

// Counts a lateness into on-time / early / late by the idle-close rule.
void count_lateness(double lateness, double tolerance_ms, std::uint64_t& on_time,
                    std::uint64_t& early, std::uint64_t& late) {
  switch (classify_idle_close(lateness, tolerance_ms)) {
    case IdleClose::kEarly:
      ++early;
      break;
    case IdleClose::kOnTime:
      ++on_time;
      break;
    case IdleClose::kLate:
      ++late;
      break;
  }
}

}  // namespace

// --- writing ---------------------------------------------------------------------------------

// Writes a constant line; `text` must outlive the write (string literals do).
void RunnerCore::send_line(Connection& c, std::string_view text) {
  auto* stream = reinterpret_cast<uv_stream_t*>(&c.tcp);
  uv_buf_t b = uv_buf_init(const_cast<char*>(text.data()), static_cast<unsigned>(text.size()));
  const int n = uv_try_write(stream, &b, 1);
  if (n == static_cast<int>(text.size())) return;
  if (n >= 0 || n == UV_EAGAIN) {  // socket buffer full (rare): queue the rest
    const std::size_t done = n > 0 ? static_cast<std::size_t>(n) : 0;
    b = uv_buf_init(const_cast<char*>(text.data() + done),
                    static_cast<unsigned>(text.size() - done));
    auto* req = new uv_write_t;
    if (uv_write(req, stream, &b, 1, [](uv_write_t* r, int) { delete r; }) == 0) return;
    delete req;
  }
  ++result_.io_errors;  // e.g. EPIPE: the read side sees the close and classifies it
}

// Writes a line made for this one write; queued bytes are owned by the write request.
void RunnerCore::send_owned(Connection& c, std::string text) {
  auto* stream = reinterpret_cast<uv_stream_t*>(&c.tcp);
  uv_buf_t b = uv_buf_init(text.data(), static_cast<unsigned>(text.size()));
  const int n = uv_try_write(stream, &b, 1);
  if (n == static_cast<int>(text.size())) return;
  if (n >= 0 || n == UV_EAGAIN) {
    struct OwnedWrite {
      uv_write_t req;
      std::string rest;
    };
    auto* w = new OwnedWrite{{}, text.substr(n > 0 ? static_cast<std::size_t>(n) : 0)};
    w->req.data = w;
    b = uv_buf_init(w->rest.data(), static_cast<unsigned>(w->rest.size()));
    if (uv_write(&w->req, stream, &b, 1,
                 [](uv_write_t* r, int) { delete static_cast<OwnedWrite*>(r->data); }) == 0) {
      return;
    }
    delete w;
  }
  ++result_.io_errors;
}

// --- each connection's turn ------------------------------------------------------------------

void RunnerCore::on_ping_tick(uv_timer_t* t) {
  auto* self = static_cast<RunnerCore*>(t->data);
  self->pings_.advance(self->now_ms(), [self](std::uint32_t i) {
    Connection& c = self->conns_[i];
    if (c.state != ConnState::kOpen) return;  // closed since it joined the ring
    self->act(c);
  });
}

// An active connection's turn, once per ping interval.
void RunnerCore::act(Connection& c) {
  switch (c.role) {
    case Role::kIdle:
      break;
    case Role::kPing:
      ++result_.pings_sent;
      if (c.pings_in_flight++ == 0) c.ping_sent_ms = now_ms();
      send_line(c, "PING\n");
      break;
    case Role::kSlowReader:
      // A burst whose PONGs pile up behind the slow reads; its RTT is not timed.
      result_.pings_sent += cfg_.slow_burst;
      result_.slow_pings_sent += cfg_.slow_burst;
      c.pings_in_flight = static_cast<std::uint16_t>(c.pings_in_flight + cfg_.slow_burst);
      send_line(c, slow_burst_text_);
      break;
    case Role::kDelay: {
      if (c.delays.size() >= kMaxDelaysInFlight) break;
      const std::uint32_t seq = c.delay_seq++;
      c.delays.push_back({seq, now_ms()});
      ++c.oks_due;
      ++result_.delays_sent;
      send_owned(c, fmt::format("DELAY {} {}.{}\n", cfg_.delay.count(),
                                cfg_.first_index + c.local_index, seq));
      break;
    }
    case Role::kGarbage:
      ++c.garbage_due;
      send_line(c, kGarbageLines[result_.garbage_sent++ % std::size(kGarbageLines)]);
      break;
  }
}

// Lets every slow reader that is not reading take its next small read.
void RunnerCore::on_slow_read_tick(uv_timer_t* t) {
  auto* self = static_cast<RunnerCore*>(t->data);
  for (std::uint32_t i : self->slow_ids_) {
    Connection& c = self->conns_[i];
    if (c.state == ConnState::kOpen) self->start_reading(c);
  }
}

// --- reading ---------------------------------------------------------------------------------

// One buffer for the whole loop: lines are consumed in on_read before the next read.
void RunnerCore::on_alloc(uv_handle_t* h, std::size_t, uv_buf_t* buf) {
  const Connection& c = conn_of(h);
  RunnerCore& self = *c.runner;
  const bool slow = c.role == Role::kSlowReader && c.state == ConnState::kOpen;
  *buf = uv_buf_init(self.read_buffer_, slow ? kSlowReadBytes : sizeof self.read_buffer_);
}

void RunnerCore::on_read(uv_stream_t* s, ssize_t nread, const uv_buf_t* buf) {
  Connection& c = conn_of(s);
  RunnerCore& self = *c.runner;
  if (nread > 0) {
    const std::string_view data(buf->base, static_cast<std::size_t>(nread));
    const auto result = self.framer_.feed(c.partial, data, [&](std::string_view line) {
      self.on_line(c, line);
      return c.state != ConnState::kClosed;
    });
    if (result == wheel::net::LineFramer::Result::kLineTooLong) {
      self.unexpected_line("(a line longer than " + std::to_string(kMaxLine) + " bytes)");
    }
  } else if (nread < 0) {
    self.server_closed(c, nread == UV_EOF ? 0 : static_cast<int>(nread));
  }
  // A slow reader takes one small read per tick (on_slow_read_tick resumes it).
  if (c.role == Role::kSlowReader && c.state == ConnState::kOpen) {
    uv_read_stop(reinterpret_cast<uv_stream_t*>(&c.tcp));
  }
}

void RunnerCore::on_line(Connection& c, std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line == "PONG") {
    ++result_.pongs_received;
    if (c.role == Role::kSlowReader) ++result_.slow_pongs_received;
    if (c.churn) return churn_ponged(c);
    if (c.pings_in_flight > 0) {
      --c.pings_in_flight;
      if (c.ping_sent_ms >= 0) {
        result_.rtt_ms.push_back(now_ms() - c.ping_sent_ms);
        c.ping_sent_ms = -1;
      }
    }
  } else if (line == "PING") {
    // The server's heartbeat (wheel-server --writer-idle). An answer is input to the server, so
    // a connection meant to look idle stays silent.
    ++result_.heartbeats_received;
    using Heartbeats = LoadConfig::Heartbeats;
    if (cfg_.answer_heartbeats == Heartbeats::kAll ||
        (cfg_.answer_heartbeats == Heartbeats::kActive && (c.active || c.churn))) {
      ++result_.heartbeats_answered;
      send_line(c, "PONG\n");
    }
  } else if (line == "BYE idle") {
    ++result_.bye_idle_received;
    c.bye_idle = true;
  } else if (line == "BYE shutdown") {
    server_shutting_down(c);
  } else if (line.starts_with("BYE")) {
    // After our QUIT, or the server shutting down: the close that follows tells the story.
  } else if (c.role == Role::kDelay && line == "OK" && c.oks_due > 0) {
    --c.oks_due;
    ++result_.delays_acknowledged;
  } else if (c.role == Role::kDelay && line.starts_with("DELAYED ")) {
    delivered(c, line.substr(8));
  } else if (c.role == Role::kGarbage && line == "ERR unknown command" && c.garbage_due > 0) {
    --c.garbage_due;
    ++result_.garbage_rejected;
  } else {
    unexpected_line(line);
  }
}

// "DELAYED <token>" arrived: judge it against its DELAY's send time + delay.
void RunnerCore::delivered(Connection& c, std::string_view token) {
  const std::string prefix = fmt::format("{}.", cfg_.first_index + c.local_index);
  std::uint32_t seq = 0;
  const char* end = token.data() + token.size();
  const auto [ptr, ec] =
      std::from_chars(token.data() + std::min(prefix.size(), token.size()), end, seq);
  const auto it = std::find_if(c.delays.begin(), c.delays.end(),
                               [seq](const PendingDelay& d) { return d.seq == seq; });
  if (!token.starts_with(prefix) || ec != std::errc() || ptr != end || it == c.delays.end()) {
    return unexpected_line(fmt::format("DELAYED {}", token));
  }
  const double lateness = now_ms() - (it->sent_ms + static_cast<double>(cfg_.delay.count()));
  result_.delayed_lateness_ms.push_back(lateness);
  count_lateness(lateness, static_cast<double>(cfg_.tolerance.count()), result_.delayed_on_time,
                 result_.delayed_early, result_.delayed_late);
  *it = c.delays.back();
  c.delays.pop_back();
}

void RunnerCore::unexpected_line(std::string_view line) {
  if (result_.unexpected_lines++ < 5) {
    wheel::logger()->warn("wheel-load: unexpected line from the server: '{}'", line);
  }
}

// When the server's idle close reached this host, for a connection that got "BYE idle": the
// kernel's arrival time of that last line (TCP_INFO's tcpi_last_data_recv, ms), not when this
// loop got around to reading it. A client loop that falls behind under load (a million
// connections on two cores) would otherwise blame its own delay on the server. Otherwise, or
// if the kernel cannot tell: `now`.
double RunnerCore::close_arrival_ms(Connection& c, double now) const {
  uv_os_fd_t fd = -1;
  if (!c.bye_idle || uv_fileno(reinterpret_cast<const uv_handle_t*>(&c.tcp), &fd) != 0) {
    return now;
  }
  tcp_info info{};
  socklen_t len = sizeof info;
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return now;
  return std::max(c.connect_ms, now - static_cast<double>(info.tcpi_last_data_recv));
}

// The server closed (EOF) or reset the connection.
void RunnerCore::server_closed(Connection& c, int err) {
  if (c.churn) return churn_closed(c, err);
  if (err != 0) {
    if (result_.io_errors++ == 0) {
      wheel::logger()->warn("wheel-load: read error {} (further errors are counted)",
                            uv_err_name(err));
    }
  }
  judge_pending_delays(c);
  if (c.state == ConnState::kOpen) {
    ++closed_by_server_;
    const double now = now_ms();
    if (c.bye_shutdown || result_.server_shutdown_at_s >= 0) {
      // The server's shutdown, not its idle policy: counted apart, never judged.
      if (c.active) {
        --active_open_;
        ++result_.active_closed_by_shutdown;
      } else {
        --idle_open_;
        ++result_.idle_closed_by_shutdown;
      }
    } else if (c.active) {
      --active_open_;
      ++result_.active_closed_early;
      wheel::logger()->debug(
          "wheel-load: active connection {} closed by the server after {:.0f} ms",
          cfg_.first_index + c.local_index, now - c.connect_ms);
    } else {
      --idle_open_;
      judge_idle_close(c, now);
    }
  } else if (c.state == ConnState::kQuitting) {
    --quitting_;
  }
  c.state = ConnState::kClosed;
  close_handle(c);
  if (ending_ && quitting_ == 0) finish();
}

// An idle connection the server closed: on time, early or late against --expect-idle-close.
void RunnerCore::judge_idle_close(Connection& c, double now) {
  if (cfg_.expect_idle_close.count() == 0) {
    ++result_.idle_closed_early;  // no close was expected at all
    return;
  }
  const double expected = c.connect_ms + static_cast<double>(cfg_.expect_idle_close.count());
  // The kernel's arrival time judges lateness. It counts in jiffies, which a loaded VM can see
  // jump, so it never alone makes a close early: only the moment the close was read, which is
  // never before its arrival, does.
  double lateness = close_arrival_ms(c, now) - expected;
  if (lateness < -kEarlyMarginMs) lateness = std::max(lateness, now - expected);
  result_.idle_lateness_ms.push_back(lateness);
  count_lateness(lateness, static_cast<double>(cfg_.tolerance.count()), result_.idle_closed_on_time,
                 result_.idle_closed_early, result_.idle_closed_late);
}

}  // namespace wheel::load
