#include "server_core.h"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cassert>
#include <stdexcept>
#include <system_error>

#include "wheel/net/listen_socket.h"

namespace wheel::net {
namespace {

void check_uv(int rc, const char* what) {
  if (rc != 0)
    throw std::system_error(-rc, std::generic_category(),
                            std::string(what) + " (" + uv_err_name(rc) + ")");
}

void validate(const ServerOptions& o) {
  using std::chrono::milliseconds;
  if (o.tick < milliseconds(1)) throw std::invalid_argument("tick: must be at least 1ms");
  if (o.wheel_size == 0 || o.wheel_size > (std::size_t{1} << 30)) {
    throw std::invalid_argument("wheel_size: must be within 1 ..= 2^30");
  }
  if (o.max_line == 0) throw std::invalid_argument("max_line: must be positive");
  if (o.max_output == 0) throw std::invalid_argument("max_output: must be positive");
  if (o.reader_idle.count() < 0 || o.writer_idle.count() < 0 || o.all_idle.count() < 0 ||
      o.stats_interval.count() < 0) {
    throw std::invalid_argument("durations must not be negative");
  }
}

}  // namespace

ServerCore::ServerCore(ServerOptions options)
    : options_((validate(options), std::move(options))), read_buffer_(new char[kReadBufferSize]) {
  stats_.worker = options_.worker_index;
  check_uv(uv_loop_init(&loop_), "uv_loop_init");
  loop_.data = this;  // Connection finds its server through its handle's loop
  executor_ = std::make_unique<LoopExecutor>(&loop_);
  TimerOptions timer_options;
  timer_options.tick_duration = options_.tick;
  timer_options.ticks_per_wheel = options_.wheel_size;
  timer_options.thread_name = "wheel-timer-" + std::to_string(options_.worker_index);
  timer_options.executor = [executor = executor_.get()](TimerJob job) {
    executor->post(std::move(job));  // timer thread -> loop thread
  };
  timer_ = std::make_unique<HashedWheelTimer>(std::move(timer_options));
  check_uv(
      uv_async_init(&loop_, &shutdown_async_,
                    [](uv_async_t* a) { static_cast<ServerCore*>(a->data)->begin_shutdown(); }),
      "uv_async_init");
  shutdown_async_.data = this;
  shutdown_async_open_ = true;
  uv_timer_init(&loop_, &stats_timer_);
  stats_timer_.data = this;
  uv_timer_init(&loop_, &force_close_timer_);
  force_close_timer_.data = this;
}

ServerCore::~ServerCore() {
  timer_->stop();
  if (!finished_) {  // run() never ran to its end: close what the constructor opened
    {
      std::lock_guard<std::mutex> lock(shutdown_mutex_);
      shutdown_async_open_ = false;
    }
    uv_close(reinterpret_cast<uv_handle_t*>(&shutdown_async_), nullptr);
    uv_close(reinterpret_cast<uv_handle_t*>(&stats_timer_), nullptr);
    uv_close(reinterpret_cast<uv_handle_t*>(&force_close_timer_), nullptr);
    if (listening_) uv_close(reinterpret_cast<uv_handle_t*>(&listener_), nullptr);
    if (signals_) {
      uv_close(reinterpret_cast<uv_handle_t*>(&sigint_), nullptr);
      uv_close(reinterpret_cast<uv_handle_t*>(&sigterm_), nullptr);
    }
    executor_->close();
    uv_run(&loop_, UV_RUN_DEFAULT);
  }
  const int rc = uv_loop_close(&loop_);
  if (rc != 0) spdlog::error("wheel-server: uv_loop_close: {}", uv_err_name(rc));
}

std::uint16_t ServerCore::listen() {
  // A write to a reset socket must fail with EPIPE, not kill the process.
  ::signal(SIGPIPE, SIG_IGN);
  check_uv(uv_tcp_init(&loop_, &listener_), "uv_tcp_init");
  listener_.data = this;
  listening_ = true;  // from here on the handle needs closing
  if (options_.reuse_port) {
    const int fd = bind_reuseport_socket(options_.host, options_.port);
    const int rc = uv_tcp_open(&listener_, fd);
    if (rc != 0) ::close(fd);
    check_uv(rc, "uv_tcp_open");
  } else {
    sockaddr_storage addr{};
    if (uv_ip4_addr(options_.host.c_str(), options_.port, reinterpret_cast<sockaddr_in*>(&addr)) !=
            0 &&
        uv_ip6_addr(options_.host.c_str(), options_.port, reinterpret_cast<sockaddr_in6*>(&addr)) !=
            0) {
      throw std::invalid_argument("not a numeric IPv4 or IPv6 address: '" + options_.host + "'");
    }
    check_uv(uv_tcp_bind(&listener_, reinterpret_cast<sockaddr*>(&addr), 0), "bind");
  }
  check_uv(uv_listen(reinterpret_cast<uv_stream_t*>(&listener_), 1024, &ServerCore::on_connection),
           "listen");
  sockaddr_storage bound{};
  int len = sizeof(bound);
  check_uv(uv_tcp_getsockname(&listener_, reinterpret_cast<sockaddr*>(&bound), &len),
           "getsockname");
  const std::uint16_t port = bound.ss_family == AF_INET6
                                 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                 : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  port_.store(port, std::memory_order_release);
  spdlog::info(
      "worker {}: listening on {}:{} (reader-idle {} ms, writer-idle {} ms, all-idle {} ms, "
      "tick {} ms, wheel {})",
      options_.worker_index, options_.host, port, options_.reader_idle.count(),
      options_.writer_idle.count(), options_.all_idle.count(), options_.tick.count(),
      timer_->ticks_per_wheel());
  return port;
}

void ServerCore::handle_signals() {
  const auto on_signal = [](uv_signal_t* s, int signum) {
    spdlog::info("worker {}: got signal {}, shutting down",
                 static_cast<ServerCore*>(s->data)->options_.worker_index, signum);
    static_cast<ServerCore*>(s->data)->begin_shutdown();
  };
  uv_signal_init(&loop_, &sigint_);
  uv_signal_init(&loop_, &sigterm_);
  sigint_.data = sigterm_.data = this;
  signals_ = true;
  check_uv(uv_signal_start(&sigint_, on_signal, SIGINT), "uv_signal_start(SIGINT)");
  check_uv(uv_signal_start(&sigterm_, on_signal, SIGTERM), "uv_signal_start(SIGTERM)");
}

ServerStats ServerCore::run() {
  loop_thread_ = std::this_thread::get_id();
  timer_->start();
  if (options_.stats_interval.count() > 0) {
    const auto every = static_cast<std::uint64_t>(options_.stats_interval.count());
    uv_timer_start(
        &stats_timer_, [](uv_timer_t* t) { static_cast<ServerCore*>(t->data)->log_stats(); }, every,
        every);
  }
  uv_run(&loop_, UV_RUN_DEFAULT);
  ServerStats final_stats = snapshot();
  spdlog::info("worker {}: stopped; final counters: {}", options_.worker_index,
               final_stats.to_log_string());
  return final_stats;
}

void ServerCore::request_shutdown() {
  std::lock_guard<std::mutex> lock(shutdown_mutex_);
  if (shutdown_async_open_) uv_async_send(&shutdown_async_);
}

// ---- accepting ---------------------------------------------------------------------------

void ServerCore::on_connection(uv_stream_t* listener, int status) {
  auto* self = static_cast<ServerCore*>(listener->data);
  if (status < 0) {
    // Rare: libuv handles EMFILE/ENFILE itself (it closes its reserve descriptor, accepts and
    // closes the waiting clients, reopens it), so the listener does not spin and we are not
    // called. Anything else is logged at most once a second.
    self->stats_.accept_errors++;
    const std::uint64_t now = uv_now(&self->loop_);
    if (now - self->last_accept_error_log_ms_ >= 1000 || self->last_accept_error_log_ms_ == 0) {
      self->last_accept_error_log_ms_ = now;
      spdlog::warn("worker {}: accept failed: {} ({} accept errors so far)",
                   self->options_.worker_index, uv_err_name(status), self->stats_.accept_errors);
    }
    return;
  }
  if (self->shutting_down_) return;
  if (self->stats_.connections >= self->options_.max_connections) return self->reject_full();
  self->accept_one();
}

void ServerCore::accept_one() {
  const std::uint64_t id = allocate_slot();
  auto* c = new Connection(this, id);
  slots_[id & 0xffffffffu] = c;
  ++allocated_;
  ++stats_.connections;
  const int rc = c->start(reinterpret_cast<uv_stream_t*>(&listener_));
  if (rc != 0) {
    spdlog::debug("worker {}: accept failed: {}", options_.worker_index, uv_err_name(rc));
    c->abort();
    return;
  }
  ++stats_.accepted;
  start_idle_timeouts(c);
}

void ServerCore::reject_full() {
  struct Rejected {
    uv_tcp_t tcp;
  };
  auto* r = new Rejected;
  uv_tcp_init(&loop_, &r->tcp);
  if (uv_accept(reinterpret_cast<uv_stream_t*>(&listener_),
                reinterpret_cast<uv_stream_t*>(&r->tcp)) == 0) {
    static constexpr char kFull[] = "ERR server full\n";
    uv_buf_t buf = uv_buf_init(const_cast<char*>(kFull), sizeof(kFull) - 1);
    uv_try_write(reinterpret_cast<uv_stream_t*>(&r->tcp), &buf, 1);  // best effort
    ++stats_.rejected_full;
  }
  uv_close(reinterpret_cast<uv_handle_t*>(&r->tcp),
           [](uv_handle_t* h) { delete reinterpret_cast<Rejected*>(h); });
}

std::uint64_t ServerCore::allocate_slot() {
  std::uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<std::uint32_t>(slots_.size());
    slots_.push_back(nullptr);
  }
  generation_ = (generation_ + 1) & kGenerationMask;
  return (static_cast<std::uint64_t>(generation_) << 32) | slot;
}

Connection* ServerCore::find(std::uint64_t id) {
  const std::uint32_t slot = static_cast<std::uint32_t>(id);
  if (slot >= slots_.size()) return nullptr;
  Connection* c = slots_[slot];
  return c != nullptr && c->id() == id && !c->closing() ? c : nullptr;
}

void ServerCore::on_closing(Connection* c) {
  assert_in_loop_thread();
  for (TimeoutHandle& handle : c->idle) {
    // A timeout already expired and queued for the loop cannot be cancelled; its job will not
    // find this connection id and do nothing.
    if (handle) handle->cancel();
    handle.reset();
  }
  if (c->delayed) {
    for (TimeoutHandle& handle : *c->delayed) handle->cancel();
    stats_.delayed_pending -= c->delayed->size();
    c->delayed.reset();
  }
  assert(stats_.connections > 0);
  --stats_.connections;
}

void ServerCore::on_closed(std::uint64_t id) {
  const std::uint32_t slot = static_cast<std::uint32_t>(id);
  assert(slot < slots_.size() && slots_[slot] != nullptr);
  slots_[slot] = nullptr;
  free_slots_.push_back(slot);
  --allocated_;
  if (shutting_down_ && allocated_ == 0) finish_shutdown();
}

// ---- stats and shutdown ------------------------------------------------------------------

ServerStats ServerCore::snapshot() {
  stats_.worker = options_.worker_index;
  stats_.pid = static_cast<std::int64_t>(::getpid());
  return stats_;
}

void ServerCore::log_stats() {
  spdlog::info("worker {}: stats {} pending_timeouts={}", options_.worker_index,
               snapshot().to_log_string(), timer_->pending_timeouts());
}

void ServerCore::begin_shutdown() {
  assert_in_loop_thread();
  if (shutting_down_) return;
  shutting_down_ = true;
  spdlog::info("worker {}: shutting down: {} connections", options_.worker_index,
               stats_.connections);
  if (listening_) uv_close(reinterpret_cast<uv_handle_t*>(&listener_), nullptr);
  listening_ = false;
  if (signals_) {
    uv_close(reinterpret_cast<uv_handle_t*>(&sigint_), nullptr);
    uv_close(reinterpret_cast<uv_handle_t*>(&sigterm_), nullptr);
    signals_ = false;
  }
  uv_timer_stop(&stats_timer_);
  for (Connection* c : slots_) {
    if (c != nullptr && !c->closing()) c->close_with("BYE shutdown\n");
  }
  if (allocated_ == 0) return finish_shutdown();
  // Clients that do not take their last words in time are cut off: exit within 2 s.
  uv_timer_start(
      &force_close_timer_,
      [](uv_timer_t* t) { static_cast<ServerCore*>(t->data)->force_close_all(); }, 1000, 0);
}

void ServerCore::force_close_all() {
  spdlog::warn("worker {}: {} connections still closing after 1 s, closing them now",
               options_.worker_index, allocated_);
  for (Connection* c : slots_) {
    if (c != nullptr) c->abort();
  }
}

void ServerCore::finish_shutdown() {
  assert_in_loop_thread();
  if (finished_) return;
  finished_ = true;
  timer_->stop();      // joins the worker: nothing posts to the executor any more
  executor_->close();  // runs the jobs still queued (they find no connection), then closes
  {
    std::lock_guard<std::mutex> lock(shutdown_mutex_);
    shutdown_async_open_ = false;
  }
  uv_close(reinterpret_cast<uv_handle_t*>(&shutdown_async_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&stats_timer_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&force_close_timer_), nullptr);
}

}  // namespace wheel::net
