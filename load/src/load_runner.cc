// SPDX-License-Identifier: Apache-2.0
#include "wheel/load/load_runner.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <spdlog/spdlog.h>

#include <sys/socket.h>
#include <unistd.h>
#include "wheel/logger.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "connection.h"
#include "wheel/load/idle_close.h"
#include "wheel/load/ping_ring.h"

namespace wheel::load {
namespace {

constexpr std::uint64_t kConnectTickMs = 5;
constexpr std::chrono::milliseconds kPingTick{10};
constexpr std::uint64_t kQuitGraceMs = 1000;
constexpr std::size_t kMaxLine = 4096;
// Slow readers read at most this much, once per kSlowReadEveryMs: about 5 KB/s each.
constexpr std::size_t kSlowReadBytes = 256;
constexpr std::uint64_t kSlowReadEveryMs = 50;
// A DELAY connection has at most this many messages in flight; it skips a turn when full.
constexpr std::size_t kMaxDelaysInFlight = 64;
// Unknown commands the garbage senders send, in turn: each must get "ERR unknown command".
constexpr std::string_view kGarbageLines[] = {"HELLO there\n", "ping\n", "GET / HTTP/1.0\n",
                                              "PINGPONG\n", "\x01\x7f\xfe binary\n"};

template <typename T>
Connection& conn_of(T* handle_or_req) {
  return *static_cast<Connection*>(handle_or_req->data);
}

}  // namespace

class RunnerCore {
 public:
  RunnerCore(LoadConfig config, LoadRunner::ProgressCallback on_progress)
      : cfg_(std::move(config)), on_progress_(std::move(on_progress)), rng_(cfg_.seed) {}

  LoadResult run() {
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

 private:
  double now_ms() const { return static_cast<double>(uv_hrtime() - start_ns_) / 1e6; }

  std::array<uv_timer_t*, 7> all_timers() {
    return {&connect_timer_, &ping_timer_,      &progress_timer_, &end_timer_,
            &grace_timer_,   &slow_read_timer_, &churn_timer_};
  }

  std::uint64_t mix_failures() const {
    const LoadResult& r = result_;
    return r.delayed_early + r.delayed_late + r.churn_failed + r.unexpected_lines;
  }

  Progress progress() const {
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

  // --- opening connections -------------------------------------------------------------------

  static void on_connect_tick(uv_timer_t* t) {
    auto* self = static_cast<RunnerCore*>(t->data);
    // Paced by elapsed time, not by tick count, so a stalled loop catches up instead of drifting.
    const double due = self->now_ms() / 1000.0 * self->cfg_.connect_rate + 1;
    const std::size_t target =
        std::min<std::size_t>(self->cfg_.share, static_cast<std::size_t>(due));
    while (self->next_to_open_ < target) self->open(self->next_to_open_++);
    if (self->next_to_open_ == self->cfg_.share) uv_timer_stop(t);
  }

  void open(std::size_t local) {
    Connection& c = conns_[local];
    c.runner = this;
    c.local_index = static_cast<std::uint32_t>(local);
    const std::size_t global = cfg_.first_index + local;
    c.role = role_of(global, cfg_);
    c.active = c.role != Role::kIdle;
    if (int e = start_connect(c, global)) connect_failed(c, e);
  }

  // Creates, binds and connects c's socket from the source address of `address_index`.
  // Returns 0, or a libuv error code (the handle, if made, is closed by the caller's path).
  int start_connect(Connection& c, std::size_t address_index) {
    c.tcp.data = &c;
    c.connect_req.data = &c;
    c.state = ConnState::kConnecting;

    // The socket is made here, not by libuv, to set IP_BIND_ADDRESS_NO_PORT before bind: the
    // port is then chosen at connect time per (source, destination) pair, so each source address
    // offers its whole ephemeral range to every server port instead of once in all.
    const int family = cfg_.host.ipv6 ? AF_INET6 : AF_INET;
    const int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return uv_translate_sys_error(errno);
    if (c.role == Role::kSlowReader) {
      // A small receive buffer, so the server's output backs up after a little, not megabytes.
      const int rcvbuf = 4096;
      setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    }
    if (!cfg_.host.ipv6 && !cfg_.source_addresses.empty()) {
      const int one = 1;
      setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
      sockaddr_in src{};
      src.sin_family = AF_INET;
      src.sin_addr.s_addr =
          htonl(cfg_.source_addresses[address_index % cfg_.source_addresses.size()]);
      if (bind(fd, reinterpret_cast<const sockaddr*>(&src), sizeof src) != 0) {
        const int err = uv_translate_sys_error(errno);
        ::close(fd);
        return err;
      }
    }
    uv_tcp_init(&loop_, &c.tcp);
    c.handle_open = true;
    if (int e = uv_tcp_open(&c.tcp, fd)) {
      ::close(fd);  // uv_tcp_open failed, so the handle does not own fd
      return e;
    }
    uv_tcp_nodelay(&c.tcp, 1);
    sockaddr_storage dst{};
    if (cfg_.host.ipv6) {
      auto& d6 = reinterpret_cast<sockaddr_in6&>(dst);
      d6.sin6_family = AF_INET6;
      d6.sin6_port = htons(cfg_.port);
      std::memcpy(&d6.sin6_addr, cfg_.host.v6.data(), 16);
    } else {
      auto& d4 = reinterpret_cast<sockaddr_in&>(dst);
      d4.sin_family = AF_INET;
      d4.sin_port = htons(cfg_.port);
      d4.sin_addr.s_addr = htonl(cfg_.host.v4);
    }
    // Taken before connect(): on loopback the server may accept inside the call, and this
    // process may be preempted for a long time on a loaded machine before it reads the clock
    // again. The server cannot have accepted earlier than this, whatever the scheduler does.
    c.connect_ms = now_ms();
    if (int e = uv_tcp_connect(&c.connect_req, &c.tcp, reinterpret_cast<const sockaddr*>(&dst),
                               &RunnerCore::on_connect)) {
      return e;
    }
    return 0;
  }

  void connect_failed(Connection& c, int err) { count_connect_error(c, uv_err_name(err)); }

  void count_connect_error(Connection& c, const char* kind) {
    ++result_.connect_errors;
    if (result_.connect_errors_by_kind[kind]++ == 0) {
      wheel::logger()->warn(
          "wheel-load: connect failed: {} (further {} errors are counted, not logged)", kind, kind);
    }
    c.state = ConnState::kClosed;
    close_handle(c);
  }

  static void on_connect(uv_connect_t* req, int status) {
    Connection& c = conn_of(req);
    RunnerCore& self = *c.runner;
    if (c.state != ConnState::kConnecting) return;  // closed meanwhile (end of run), counted
    if (c.churn) return self.churn_connected(c, status);
    if (status < 0) return self.connect_failed(c, status);
    c.state = ConnState::kOpen;
    ++self.result_.connections_established;
    self.result_.connect_ms.push_back(self.now_ms() - c.connect_ms);
    if (c.active) {
      ++self.result_.active_count;
      ++self.active_open_;
      self.pings_.add(c.local_index, self.rng_());
      if (c.role == Role::kSlowReader) self.slow_ids_.push_back(c.local_index);
    } else {
      ++self.result_.idle_count;
      ++self.idle_open_;
    }
    self.result_.peak_open = std::max(self.result_.peak_open, self.active_open_ + self.idle_open_);
    uv_read_start(reinterpret_cast<uv_stream_t*>(&c.tcp), &RunnerCore::on_alloc,
                  &RunnerCore::on_read);
  }

  // --- reading -------------------------------------------------------------------------------

  // One buffer for the whole loop: lines are consumed in on_read before the next read.
  static void on_alloc(uv_handle_t* h, std::size_t, uv_buf_t* buf) {
    const Connection& c = conn_of(h);
    RunnerCore& self = *c.runner;
    const bool slow = c.role == Role::kSlowReader && c.state == ConnState::kOpen;
    *buf = uv_buf_init(self.read_buffer_, slow ? kSlowReadBytes : sizeof self.read_buffer_);
  }

  static void on_read(uv_stream_t* s, ssize_t nread, const uv_buf_t* buf) {
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
    // A slow reader takes one small read per kSlowReadEveryMs (on_slow_read_tick resumes it).
    if (c.role == Role::kSlowReader && c.state == ConnState::kOpen) {
      uv_read_stop(reinterpret_cast<uv_stream_t*>(&c.tcp));
    }
  }

  void on_line(Connection& c, std::string_view line) {
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
    } else if (line == "BYE idle") {
      ++result_.bye_idle_received;
      c.bye_idle = true;
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
  void delivered(Connection& c, std::string_view token) {
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
    switch (classify_idle_close(lateness, static_cast<double>(cfg_.tolerance.count()))) {
      case IdleClose::kEarly:
        ++result_.delayed_early;
        break;
      case IdleClose::kOnTime:
        ++result_.delayed_on_time;
        break;
      case IdleClose::kLate:
        ++result_.delayed_late;
        break;
    }
    *it = c.delays.back();
    c.delays.pop_back();
  }

  void unexpected_line(std::string_view line) {
    if (result_.unexpected_lines++ < 5) {
      wheel::logger()->warn("wheel-load: unexpected line from the server: '{}'", line);
    }
  }

  // When the server's idle close reached this host, for a connection that got "BYE idle": the
  // kernel's arrival time of that last line (TCP_INFO's tcpi_last_data_recv, ms), not when this
  // loop got around to reading it. A client loop that falls behind under load (a million
  // connections on two cores) would otherwise blame its own delay on the server. Otherwise, or
  // if the kernel cannot tell: `now`.
  double close_arrival_ms(Connection& c, double now) const {
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
  void server_closed(Connection& c, int err) {
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
      if (c.active) {
        --active_open_;
        ++result_.active_closed_early;
        wheel::logger()->debug(
            "wheel-load: active connection {} closed by the server after {:.0f} ms",
            cfg_.first_index + c.local_index, now - c.connect_ms);
      } else {
        --idle_open_;
        if (cfg_.expect_idle_close.count() > 0) {
          const double expected =
              c.connect_ms + static_cast<double>(cfg_.expect_idle_close.count());
          // The kernel's arrival time judges lateness. It counts in jiffies, which a loaded VM
          // can see jump, so it never alone makes a close early: only the moment the close was
          // read, which is never before its arrival, does.
          double lateness = close_arrival_ms(c, now) - expected;
          if (lateness < -kEarlyMarginMs) lateness = std::max(lateness, now - expected);
          result_.idle_lateness_ms.push_back(lateness);
          switch (classify_idle_close(lateness, static_cast<double>(cfg_.tolerance.count()))) {
            case IdleClose::kEarly:
              ++result_.idle_closed_early;
              break;
            case IdleClose::kOnTime:
              ++result_.idle_closed_on_time;
              break;
            case IdleClose::kLate:
              ++result_.idle_closed_late;
              break;
          }
        } else {
          ++result_.idle_closed_early;  // no close was expected at all
        }
      }
    } else if (c.state == ConnState::kQuitting) {
      --quitting_;
    }
    c.state = ConnState::kClosed;
    close_handle(c);
    if (ending_ && quitting_ == 0) finish();
  }

  void close_handle(Connection& c) {
    if (!c.handle_open) {
      if (c.churn && c.state == ConnState::kClosed) c.state = ConnState::kNotStarted;
      return;
    }
    c.handle_open = false;
    uv_close(reinterpret_cast<uv_handle_t*>(&c.tcp), c.churn ? &on_churn_slot_free : nullptr);
  }

  // --- writing -------------------------------------------------------------------------------

  // Writes a constant line; `text` must outlive the write (string literals do).
  void send_line(Connection& c, std::string_view text) {
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
  void send_owned(Connection& c, std::string text) {
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

  static void on_ping_tick(uv_timer_t* t) {
    auto* self = static_cast<RunnerCore*>(t->data);
    self->pings_.advance(self->now_ms(), [self](std::uint32_t i) {
      Connection& c = self->conns_[i];
      if (c.state != ConnState::kOpen) return;  // closed since it joined the ring
      self->act(c);
    });
  }

  // An active connection's turn, once per ping interval.
  void act(Connection& c) {
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
  static void on_slow_read_tick(uv_timer_t* t) {
    auto* self = static_cast<RunnerCore*>(t->data);
    for (std::uint32_t i : self->slow_ids_) {
      Connection& c = self->conns_[i];
      if (c.state == ConnState::kOpen) {
        uv_read_start(reinterpret_cast<uv_stream_t*>(&c.tcp), &RunnerCore::on_alloc,
                      &RunnerCore::on_read);
      }
    }
  }

  // --- churn ---------------------------------------------------------------------------------

  // Starts cycles on free slots, at most churn_rate per second since the start.
  static void on_churn_tick(uv_timer_t* t) {
    auto* self = static_cast<RunnerCore*>(t->data);
    const auto due =
        static_cast<std::uint64_t>(self->now_ms() / 1000.0 * self->cfg_.churn_rate) + 1;
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

  void churn_failed(Connection& c, std::string_view why) {
    if (result_.churn_failed++ < 5)
      wheel::logger()->warn("wheel-load: churn cycle failed: {}", why);
    c.state = ConnState::kClosed;
    close_handle(c);
  }

  void churn_connected(Connection& c, int status) {
    if (status < 0) return churn_failed(c, uv_err_name(status));
    ++result_.churn_established;
    c.state = ConnState::kOpen;
    uv_read_start(reinterpret_cast<uv_stream_t*>(&c.tcp), &RunnerCore::on_alloc,
                  &RunnerCore::on_read);
    ++result_.pings_sent;
    send_line(c, "PING\n");
  }

  // The cycle's PONG: every 4th cycle aborts (RST), the others QUIT and wait for the close.
  void churn_ponged(Connection& c) {
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

  void churn_closed(Connection& c, int err) {
    if (c.state == ConnState::kQuitting && err == 0) {
      ++result_.churn_completed;
      c.state = ConnState::kClosed;
      close_handle(c);
    } else if (c.state == ConnState::kOpen || c.state == ConnState::kQuitting) {
      churn_failed(c, err != 0 ? uv_err_name(err) : "closed by the server before QUIT");
    }
  }

  static void on_churn_slot_free(uv_handle_t* h) {
    Connection& c = conn_of(h);
    ++c.churn_cycle;
    if (!c.runner->ending_) c.state = ConnState::kNotStarted;
  }

  // --- the end -------------------------------------------------------------------------------

  static void on_progress_tick(uv_timer_t* t) {
    auto* self = static_cast<RunnerCore*>(t->data);
    const double now = self->now_ms();
    self->result_.max_loop_stall_ms =
        std::max(self->result_.max_loop_stall_ms, now - self->last_progress_ms_ - 1000);
    self->last_progress_ms_ = now;
    if (self->on_progress_) self->on_progress_(self->progress());
  }

  static void on_end(uv_timer_t* t) {
    auto* self = static_cast<RunnerCore*>(t->data);
    self->end();
  }

  void end() {
    ending_ = true;
    result_.duration_s = now_ms() / 1000.0;
    uv_timer_stop(&connect_timer_);
    uv_timer_stop(&ping_timer_);
    uv_timer_stop(&slow_read_timer_);
    uv_timer_stop(&churn_timer_);
    const double now = now_ms();
    for (std::size_t i = 0; i < cfg_.churn; ++i) {
      Connection& c = churn_[i];
      if (c.state == ConnState::kConnecting || c.state == ConnState::kOpen ||
          c.state == ConnState::kQuitting) {
        ++result_.churn_interrupted;
        c.state = ConnState::kClosed;
        close_handle(c);
      }
    }
    if (next_to_open_ < cfg_.share) {
      const auto n = cfg_.share - next_to_open_;
      result_.connect_errors += n;
      result_.connect_errors_by_kind["not_started"] += n;
      wheel::logger()->warn(
          "wheel-load: {} connections were not opened before the end of --duration", n);
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
            if (c.role == Role::kSlowReader) {  // read the rest at full speed
              uv_read_start(reinterpret_cast<uv_stream_t*>(&c.tcp), &RunnerCore::on_alloc,
                            &RunnerCore::on_read);
            }
          } else {
            --idle_open_;
            // A close not yet due when the run ends is no failure: it is reported apart.
            const double due =
                c.connect_ms +
                static_cast<double>((cfg_.expect_idle_close + cfg_.tolerance).count());
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
  void judge_pending_delays(Connection& c) {
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
  static void on_grace_over(uv_timer_t* t) {
    auto* self = static_cast<RunnerCore*>(t->data);
    self->finish();
  }

  void finish() {
    if (finished_) return;
    finished_ = true;
    // Every connection lands in exactly one bucket of the report.
    assert(result_.connections_established + result_.connect_errors == cfg_.share);
    assert(result_.active_count == result_.active_survived + result_.active_closed_early);
    assert(result_.idle_count == result_.idle_closed_on_time + result_.idle_closed_early +
                                     result_.idle_closed_late + result_.idle_never_closed +
                                     result_.idle_not_yet_due);
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
  }

  LoadConfig cfg_;
  LoadRunner::ProgressCallback on_progress_;
  std::mt19937_64 rng_;
  uv_loop_t loop_{};
  uv_timer_t connect_timer_{}, ping_timer_{}, progress_timer_{}, end_timer_{}, grace_timer_{};
  uv_timer_t slow_read_timer_{}, churn_timer_{};
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
  bool ending_ = false;
  bool finished_ = false;
  LoadResult result_;
  char read_buffer_[64 * 1024];
  const wheel::net::LineFramer framer_{kMaxLine};  // shared with net/ and the line server
};

LoadRunner::LoadRunner(LoadConfig config, ProgressCallback on_progress)
    : core_(std::make_unique<RunnerCore>(std::move(config), std::move(on_progress))) {}

LoadRunner::~LoadRunner() = default;

LoadResult LoadRunner::run() {
  return core_->run();
}

}  // namespace wheel::load
