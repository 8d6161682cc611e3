#include "wheel/load/load_runner.h"

#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cassert>
#include <cerrno>
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
    for (uv_timer_t* t :
         {&connect_timer_, &ping_timer_, &progress_timer_, &end_timer_, &grace_timer_}) {
      uv_timer_init(&loop_, t);
      t->data = this;
    }
    start_ns_ = uv_hrtime();
    uv_timer_start(&connect_timer_, &RunnerCore::on_connect_tick, 0, kConnectTickMs);
    uv_timer_start(&ping_timer_, &RunnerCore::on_ping_tick, kPingTick.count(), kPingTick.count());
    uv_timer_start(&progress_timer_, &RunnerCore::on_progress_tick, 1000, 1000);
    uv_timer_start(&end_timer_, &RunnerCore::on_end, cfg_.duration.count(), 0);
    uv_run(&loop_, UV_RUN_DEFAULT);
    if (uv_loop_close(&loop_) != 0) {
      spdlog::error("wheel-load: loop still had handles at the end");  // a bug, not a load fact
    }
    return std::move(result_);
  }

 private:
  double now_ms() const { return static_cast<double>(uv_hrtime() - start_ns_) / 1e6; }

  Progress progress() const {
    Progress p;
    p.elapsed_s = now_ms() / 1000.0;
    p.requested = cfg_.share;
    p.connected = result_.connections_established;
    p.active_open = active_open_;
    p.idle_open = idle_open_;
    p.closed = closed_by_server_;
    p.errors = result_.connect_errors + result_.io_errors;
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
    c.active = is_active(global, cfg_.active_ratio);
    c.tcp.data = &c;
    c.connect_req.data = &c;
    c.state = ConnState::kConnecting;

    // The socket is made here, not by libuv, to set IP_BIND_ADDRESS_NO_PORT before bind: the
    // port is then chosen at connect time per (source, destination) pair, so each source address
    // offers its whole ephemeral range to every server port instead of once in all.
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return connect_failed(c, uv_translate_sys_error(errno));
    const int one = 1;
    setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
    sockaddr_in src{};
    src.sin_family = AF_INET;
    src.sin_addr.s_addr = htonl(cfg_.source_addresses[global % cfg_.source_addresses.size()]);
    if (bind(fd, reinterpret_cast<const sockaddr*>(&src), sizeof src) != 0) {
      const int err = uv_translate_sys_error(errno);
      ::close(fd);
      return connect_failed(c, err);
    }
    uv_tcp_init(&loop_, &c.tcp);
    c.handle_open = true;
    if (int e = uv_tcp_open(&c.tcp, fd)) {
      ::close(fd);  // uv_tcp_open failed, so the handle does not own fd
      return connect_failed(c, e);
    }
    uv_tcp_nodelay(&c.tcp, 1);
    sockaddr_in dst{};
    dst.sin_family = AF_INET;
    dst.sin_port = htons(cfg_.port);
    dst.sin_addr.s_addr = htonl(cfg_.host);
    if (int e = uv_tcp_connect(&c.connect_req, &c.tcp, reinterpret_cast<const sockaddr*>(&dst),
                               &RunnerCore::on_connect)) {
      return connect_failed(c, e);
    }
    c.connect_ms = now_ms();
  }

  void connect_failed(Connection& c, int err) { count_connect_error(c, uv_err_name(err)); }

  void count_connect_error(Connection& c, const char* kind) {
    ++result_.connect_errors;
    if (result_.connect_errors_by_kind[kind]++ == 0) {
      spdlog::warn("wheel-load: connect failed: {} (further {} errors are counted, not logged)",
                   kind, kind);
    }
    c.state = ConnState::kClosed;
    close_handle(c);
  }

  static void on_connect(uv_connect_t* req, int status) {
    Connection& c = conn_of(req);
    RunnerCore& self = *c.runner;
    if (c.state != ConnState::kConnecting) return;  // closed meanwhile (end of run), counted
    if (status < 0) return self.connect_failed(c, status);
    c.state = ConnState::kOpen;
    ++self.result_.connections_established;
    self.result_.connect_ms.push_back(self.now_ms() - c.connect_ms);
    if (c.active) {
      ++self.result_.active_count;
      ++self.active_open_;
      self.pings_.add(c.local_index, self.rng_());
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
    RunnerCore& self = *conn_of(h).runner;
    *buf = uv_buf_init(self.read_buffer_, sizeof self.read_buffer_);
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
  }

  void on_line(Connection& c, std::string_view line) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line == "PONG") {
      ++result_.pongs_received;
      if (c.pings_in_flight > 0) {
        --c.pings_in_flight;
        if (c.ping_sent_ms >= 0) {
          result_.rtt_ms.push_back(now_ms() - c.ping_sent_ms);
          c.ping_sent_ms = -1;
        }
      }
    } else if (line == "BYE idle") {
      ++result_.bye_idle_received;
    } else if (line.starts_with("BYE")) {
      // After our QUIT, or the server shutting down: the close that follows tells the story.
    } else {
      unexpected_line(line);
    }
  }

  void unexpected_line(std::string_view line) {
    if (result_.unexpected_lines++ < 5) {
      spdlog::warn("wheel-load: unexpected line from the server: '{}'", line);
    }
  }

  // The server closed (EOF) or reset the connection.
  void server_closed(Connection& c, int err) {
    if (err != 0) {
      if (result_.io_errors++ == 0) {
        spdlog::warn("wheel-load: read error {} (further errors are counted)", uv_err_name(err));
      }
    }
    if (c.state == ConnState::kOpen) {
      ++closed_by_server_;
      const double now = now_ms();
      if (c.active) {
        --active_open_;
        ++result_.active_closed_early;
        spdlog::debug("wheel-load: active connection {} closed by the server after {:.0f} ms",
                      cfg_.first_index + c.local_index, now - c.connect_ms);
      } else {
        --idle_open_;
        if (cfg_.expect_idle_close.count() > 0) {
          const double lateness =
              now - (c.connect_ms + static_cast<double>(cfg_.expect_idle_close.count()));
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
    if (!c.handle_open) return;
    c.handle_open = false;
    uv_close(reinterpret_cast<uv_handle_t*>(&c.tcp), nullptr);
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

  static void on_ping_tick(uv_timer_t* t) {
    auto* self = static_cast<RunnerCore*>(t->data);
    self->pings_.advance(self->now_ms(), [self](std::uint32_t i) {
      Connection& c = self->conns_[i];
      if (c.state != ConnState::kOpen) return;  // closed since it joined the ring
      ++self->result_.pings_sent;
      if (c.pings_in_flight++ == 0) c.ping_sent_ms = self->now_ms();
      self->send_line(c, "PING\n");
    });
  }

  // --- the end -------------------------------------------------------------------------------

  static void on_progress_tick(uv_timer_t* t) {
    auto* self = static_cast<RunnerCore*>(t->data);
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
    if (next_to_open_ < cfg_.share) {
      const auto n = cfg_.share - next_to_open_;
      result_.connect_errors += n;
      result_.connect_errors_by_kind["not_started"] += n;
      spdlog::warn("wheel-load: {} connections were not opened before the end of --duration", n);
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
          } else {
            --idle_open_;
            ++result_.idle_never_closed;
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
                                     result_.idle_closed_late + result_.idle_never_closed);
    for (std::size_t i = 0; i < next_to_open_; ++i) {
      conns_[i].state = ConnState::kClosed;
      close_handle(conns_[i]);
    }
    quitting_ = 0;
    for (uv_timer_t* t :
         {&connect_timer_, &ping_timer_, &progress_timer_, &end_timer_, &grace_timer_}) {
      uv_close(reinterpret_cast<uv_handle_t*>(t), nullptr);
    }
  }

  LoadConfig cfg_;
  LoadRunner::ProgressCallback on_progress_;
  std::mt19937_64 rng_;
  uv_loop_t loop_{};
  uv_timer_t connect_timer_{}, ping_timer_{}, progress_timer_{}, end_timer_{}, grace_timer_{};
  std::unique_ptr<Connection[]> conns_;
  std::size_t next_to_open_ = 0;
  PingRing pings_{cfg_.ping_interval, kPingTick};
  std::uint64_t start_ns_ = 0;
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
