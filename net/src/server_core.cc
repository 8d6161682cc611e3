// SPDX-License-Identifier: Apache-2.0
#include "server_core.h"

#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include "wheel/logger.h"

#include <array>
#include <cerrno>
#include <stdexcept>
#include <system_error>
#include <utility>

#include "wheel/net/listen_socket.h"
#include "wheel/net/socket_address.h"

namespace wheel::net {
namespace {

void check_uv(int rc, const char* what) {
  if (rc != 0) {
    throw std::system_error(-rc, std::generic_category(),
                            std::string(what) + " (" + uv_err_name(rc) + ")");
  }
}

TcpServerOptions validated(TcpServerOptions o) {
  if (o.max_connections == 0) throw std::invalid_argument("max_connections: must be positive");
  if (o.max_line == 0) throw std::invalid_argument("max_line: must be positive");
  if (o.max_output == 0) throw std::invalid_argument("max_output: must be positive");
  if (o.backlog <= 0) throw std::invalid_argument("backlog: must be positive");
  if (o.shutdown_grace.count() < 0) throw std::invalid_argument("shutdown_grace: negative");
  if (o.close_grace.count() < 0 || o.close_grace > kMaxIdleTime) {
    throw std::invalid_argument(
        "close_grace must be within 0 ..= " + std::to_string(kMaxIdleTime.count()) + " ms");
  }
  for (const auto t : {o.idle.reader, o.idle.writer, o.idle.all}) {
    if (t.count() < 0 || t > kMaxIdleTime) {
      throw std::invalid_argument(
          "idle times must be within 0 ..= " + std::to_string(kMaxIdleTime.count()) + " ms");
    }
  }
  return o;
}

}  // namespace

ServerCore::ServerCore(uv_loop_t* given_loop, TcpServerOptions options, ConnectionHandler& handler)
    : options_(validated(std::move(options))),
      handler_(handler),
      framer_(options_.max_line),
      loop_(given_loop),
      read_buffer_(new char[kReadBufferSize]) {
  if (loop_ == nullptr) {
    own_loop_ = std::make_unique<uv_loop_t>();
    check_uv(uv_loop_init(own_loop_.get()), "uv_loop_init");
    loop_ = own_loop_.get();
  }
  try {
    timer_ = std::make_unique<LoopTimer>(loop_, options_.timer);
    detector_ = std::make_unique<IdleDetector>(*timer_, static_cast<IdleDetector::Owner&>(*this),
                                               IdleDetector::Options{options_.observe_output});
    watch_idle_ = options_.idle.reader.count() > 0 || options_.idle.writer.count() > 0 ||
                  options_.idle.all.count() > 0;
    init_handle(
        uv_async_init(loop_, &shutdown_async_,
                      [](uv_async_t* a) { static_cast<ServerCore*>(a->data)->begin_shutdown(); }),
        "uv_async_init");
    shutdown_async_.data = this;
    shutdown_async_open_ = true;
    init_handle(uv_timer_init(loop_, &force_close_timer_), "uv_timer_init");
    force_close_timer_.data = this;
    init_handle(uv_timer_init(loop_, &drain_timer_), "uv_timer_init");
    drain_timer_.data = this;
    init_handle(uv_idle_init(loop_, &reaper_), "uv_idle_init");
    reaper_.data = this;
    epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
    if (epoll_fd_ < 0) check_uv(-errno, "epoll_create1");
    if (const int rc = uv_poll_init(loop_, &connections_poll_, epoll_fd_); rc != 0) {
      ::close(std::exchange(epoll_fd_, -1));
      check_uv(rc, "uv_poll_init");
    }
    ++open_handles_;
    connections_poll_.data = this;
    check_uv(uv_poll_start(&connections_poll_, UV_READABLE, &ServerCore::on_connections_ready),
             "uv_poll_start");
  } catch (...) {
    if (own_loop_ == nullptr) throw;  // a given loop: its owner runs the closes
    if (timer_) timer_->close();
    if (shutdown_async_open_) close_handle(&shutdown_async_);
    uv_run(loop_, UV_RUN_DEFAULT);
    uv_loop_close(loop_);
    throw;
  }
}

ServerCore::~ServerCore() {
  if (!finished_) {  // the shutdown never completed: close what is open
    begin_shutdown();
    force_close_all();
    finish_shutdown();
  }
  if (own_loop_ != nullptr) {
    uv_run(loop_, UV_RUN_DEFAULT);  // runs the close callbacks
    const int rc = uv_loop_close(loop_);
    if (rc != 0) wheel::logger()->error("TcpServer: uv_loop_close: {}", uv_err_name(rc));
  }
  assert(open_handles_ == 0 && "on a given loop, run it until stopped() before destroying");
}

void ServerCore::init_handle(int rc, const char* what) {
  check_uv(rc, what);
  ++open_handles_;
}

void ServerCore::close_handle(void* handle) {
  auto* h = static_cast<uv_handle_t*>(handle);
  h->data = this;
  uv_close(h, [](uv_handle_t* closed) { --static_cast<ServerCore*>(closed->data)->open_handles_; });
}

std::uint16_t ServerCore::listen() {
  ::signal(SIGPIPE, SIG_IGN);  // a write to a reset socket must fail with EPIPE, not kill
  const int fd = bind_tcp_socket(options_.host, options_.port, options_.reuse_port);
  if (::listen(fd, options_.backlog) != 0) {
    const int error = errno;
    ::close(fd);
    throw std::system_error(error, std::generic_category(),
                            std::string("listen (") + uv_err_name(-error) + ")");
  }
  if (const int rc = uv_poll_init_socket(loop_, &listener_, fd); rc != 0) {
    ::close(fd);
    check_uv(rc, "uv_poll_init_socket");
  }
  ++open_handles_;
  listener_.data = this;
  listen_fd_ = fd;
  listening_ = true;  // from here on the handle needs closing
  spare_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  check_uv(uv_poll_start(&listener_, UV_READABLE, &ServerCore::on_listener_readable),
           "uv_poll_start");
  const std::uint16_t port = bound_port(fd);
  port_.store(port, std::memory_order_release);
  return port;
}

void ServerCore::handle_signals() {
  const auto on_signal = [](uv_signal_t* s, int signum) {
    wheel::logger()->info("TcpServer: got signal {}, shutting down", signum);
    static_cast<ServerCore*>(s->data)->begin_shutdown();
  };
  init_handle(uv_signal_init(loop_, &sigint_), "uv_signal_init");
  sigint_.data = this;
  if (const int rc = uv_signal_init(loop_, &sigterm_); rc != 0) {
    close_handle(&sigint_);
    check_uv(rc, "uv_signal_init");
  }
  ++open_handles_;
  sigterm_.data = this;
  signals_ = true;
  check_uv(uv_signal_start(&sigint_, on_signal, SIGINT), "uv_signal_start(SIGINT)");
  check_uv(uv_signal_start(&sigterm_, on_signal, SIGTERM), "uv_signal_start(SIGTERM)");
}

void ServerCore::run() {
  if (own_loop_ == nullptr) throw std::logic_error("TcpServer::run: the loop is the owner's");
  loop_thread_ = std::this_thread::get_id();
  uv_run(loop_, UV_RUN_DEFAULT);
}

void ServerCore::request_shutdown() {
  std::lock_guard<std::mutex> lock(shutdown_mutex_);
  if (shutdown_async_open_) uv_async_send(&shutdown_async_);
}

TcpServerCounters ServerCore::counters() const {
  TcpServerCounters c = counts_;
  c.stale_timeouts = detector_->stale_timeouts();
  return c;
}

// ---- accepting ---------------------------------------------------------------------------

void ServerCore::on_listener_readable(uv_poll_t* poll, int status, int) {
  auto* self = static_cast<ServerCore*>(poll->data);
  if (status < 0) return self->log_accept_trouble("poll", status);
  // A bounded batch per wakeup keeps a connect storm from starving the open connections; the
  // poll is level-triggered, so the rest comes on the next turn of the loop.
  for (int i = 0; i < 256 && !self->shutting_down_; ++i) {
    const int fd = ::accept4(self->listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      if (self->counts_.connections >= self->options_.max_connections) {
        self->reject_full(fd);
      } else {
        self->accept_one(fd);
      }
      continue;
    }
    const int error = errno;
    if (error == EAGAIN || error == EWOULDBLOCK) return;
    if (error == EINTR || error == ECONNABORTED) continue;
    if (error == EMFILE || error == ENFILE) return self->reject_for_descriptors();
    ++self->counts_.accept_errors;
    return self->log_accept_trouble("accept", -error);
  }
}

void ServerCore::log_accept_trouble(const char* what, int error) {
  // At most one line a second: a storm of failures must not become a storm of log lines.
  const std::uint64_t now = uv_now(loop_);
  if (accept_error_logged_ && now - last_accept_error_log_ms_ < 1000) return;
  accept_error_logged_ = true;
  last_accept_error_log_ms_ = now;
  wheel::logger()->warn(
      "TcpServer: {} failed: {} ({} refused for lack of descriptors, {} other accept "
      "errors so far)",
      what, uv_err_name(error), counts_.rejected_emfile, counts_.accept_errors);
}

void ServerCore::reject_for_descriptors() {
  // Out of descriptors: give up the spare one to accept each waiting client, tell it why, and
  // close it; then take the spare back. Without this the clients would wait in the backlog
  // (and the level-triggered poll would spin) or, with libuv's own trick, get a bare EOF.
  const std::string_view line = handler_.reject_line();
  while (spare_fd_ >= 0) {
    ::close(spare_fd_);
    spare_fd_ = -1;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      if (!line.empty()) (void)!::send(fd, line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      ::close(fd);
      ++counts_.rejected_emfile;
    }
    spare_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0) break;  // EAGAIN: the backlog is empty
  }
  log_accept_trouble("accept", UV_EMFILE);
  if (spare_fd_ < 0) {
    // No spare (another thread took the descriptor): stop polling for a moment rather than spin.
    ++counts_.accept_errors;
    uv_poll_stop(&listener_);
    const int rc = uv_timer_start(
        &force_close_timer_,
        [](uv_timer_t* t) {
          auto* self = static_cast<ServerCore*>(t->data);
          if (self->spare_fd_ < 0) self->spare_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
          if (self->listening_ && !self->shutting_down_) {
            uv_poll_start(&self->listener_, UV_READABLE, &ServerCore::on_listener_readable);
          }
        },
        100, 0);
    if (rc != 0) uv_poll_start(&listener_, UV_READABLE, &ServerCore::on_listener_readable);
  }
}

void ServerCore::accept_one(int fd) {
  const std::uint64_t id = allocate_slot();
  const auto slot = static_cast<std::uint32_t>(id);
  auto* c = new Connection(this, id, fd);  // owns fd from here on
  // Replies are tiny; Nagle would hold them back. Failing to turn it off is not fatal.
  const int one = 1;
  if (::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0) {
    wheel::logger()->debug("TcpServer: TCP_NODELAY: {}", uv_err_name(-errno));
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = c;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
    const int error = errno;
    free_slots_.push_back(slot);
    delete c;
    ++counts_.accept_errors;
    return log_accept_trouble("epoll_ctl", -error);
  }
  slots_[slot] = c;
  ++allocated_;
  ++counts_.connections;
  ++counts_.accepted;
  if (watch_idle_) detector_->watch(id, c->idle_, options_.idle);
  handler_.on_open(*c);
}

void ServerCore::reject_full(int fd) {
  const std::string_view line = handler_.reject_line();
  // Best effort, never blocking: the socket is new, its send buffer empty.
  if (!line.empty()) (void)!::send(fd, line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  ::close(fd);
  ++counts_.rejected_full;
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
  const auto slot = static_cast<std::uint32_t>(id);
  if (slot >= slots_.size()) return nullptr;
  Connection* c = slots_[slot];
  return c != nullptr && c->id() == id && !c->closing() ? c : nullptr;
}

IdleWatch* ServerCore::find_watch(std::uint64_t id) {
  Connection* c = find(id);
  return c == nullptr ? nullptr : &c->idle_;
}

void ServerCore::on_idle(std::uint64_t id, IdleEvent event) {
  assert_in_loop_thread();
  if (Connection* c = find(id)) handler_.on_idle(*c, event);
}

// ---- reading -----------------------------------------------------------------------------

void ServerCore::dispatch(Connection* c, std::string_view bytes) {
  dispatching_ = c;
  if (options_.framing == Framing::kBytes) {
    handler_.on_data(*c, bytes);
  } else {
    const auto result = framer_.feed(c->partial_, bytes, [this, c](std::string_view line) {
      handler_.on_line(*c, line);
      return !c->closing();
    });
    if (result == LineFramer::Result::kLineTooLong) {
      wheel::logger()->debug("TcpServer: connection {:#x}: line longer than {} bytes", c->id(),
                             options_.max_line);
      local_reason_ = CloseReason::kLineTooLong;
      handler_.on_line_too_long(*c);
      local_reason_ = CloseReason::kLocal;
      if (!c->closing()) c->close_with({}, CloseReason::kLineTooLong);
    }
  }
  dispatching_ = nullptr;
  if (!batch_.empty()) {
    if (!c->closing()) c->write_now(batch_);
    batch_.clear();
  }
}

void ServerCore::on_closing(Connection* c, CloseReason reason) {
  assert_in_loop_thread();
  detector_->unwatch(c->idle_);
  if (dispatching_ == c) batch_.clear();
  assert(counts_.connections > 0);
  --counts_.connections;
  if (reason == CloseReason::kSlowConsumer) ++counts_.slow_consumers;
  handler_.on_close(*c, reason);
}

void ServerCore::on_input_end(Connection* c) {
  local_reason_ = CloseReason::kPeerClosed;
  handler_.on_input_end(*c);
  local_reason_ = CloseReason::kLocal;
}

void ServerCore::on_draining(Connection* c) {
  ++counts_.closing;
  const auto grace = static_cast<std::uint64_t>(options_.close_grace.count());
  draining_.emplace_back(c->id(), uv_now(loop_) + grace);
  if (draining_.size() == 1) {
    uv_timer_start(
        &drain_timer_,
        [](uv_timer_t* t) { static_cast<ServerCore*>(t->data)->on_drain_deadline(); }, grace, 0);
  }
}

void ServerCore::on_drained(Connection*) {
  assert(counts_.closing > 0);
  --counts_.closing;
}

void ServerCore::on_drain_deadline() {
  const std::uint64_t now = uv_now(loop_);
  while (!draining_.empty() && draining_.front().second <= now) {
    const std::uint64_t id = draining_.front().first;
    draining_.pop_front();
    const auto slot = static_cast<std::uint32_t>(id);
    Connection* c = slot < slots_.size() ? slots_[slot] : nullptr;
    if (c == nullptr || c->id() != id || !c->draining_) continue;  // done (or slot reused)
    ++counts_.close_grace_expired;
    wheel::logger()->debug("TcpServer: connection {:#x} did not take its last {} bytes in {} ms",
                           id, c->queued_output(), options_.close_grace.count());
    // A reset rather than a FIN: the kernel drops what it still holds for this client too.
    const linger reset{1, 0};
    ::setsockopt(c->fd_, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
    c->release_socket();
  }
  if (!draining_.empty()) {
    uv_timer_start(
        &drain_timer_,
        [](uv_timer_t* t) { static_cast<ServerCore*>(t->data)->on_drain_deadline(); },
        draining_.front().second - now, 0);
  }
}

void ServerCore::on_connections_ready(uv_poll_t* poll, int status, int) {
  auto* self = static_cast<ServerCore*>(poll->data);
  if (status < 0) {
    wheel::logger()->error("TcpServer: polling the connections failed: {}", uv_err_name(status));
    return;
  }
  // A bounded batch per turn; the set is level-triggered, so the rest comes on the next one.
  std::array<epoll_event, 256> events;
  const int n = ::epoll_wait(self->epoll_fd_, events.data(), static_cast<int>(events.size()), 0);
  for (int i = 0; i < n; ++i) {
    static_cast<Connection*>(events[i].data.ptr)->on_events(events[i].events);
  }
}

void ServerCore::release_later(Connection* c) {
  released_.push_back(c);
  if (released_.size() == 1 && !uv_is_closing(reinterpret_cast<uv_handle_t*>(&reaper_))) {
    uv_idle_start(&reaper_, [](uv_idle_t* idle) {
      auto* self = static_cast<ServerCore*>(idle->data);
      uv_idle_stop(idle);
      self->free_released();
    });
  }
}

void ServerCore::free_released() {
  std::vector<Connection*> batch;
  batch.swap(released_);
  for (Connection* c : batch) {
    const std::uint64_t id = c->id();
    delete c;
    on_freed(id);
  }
}

void ServerCore::on_freed(std::uint64_t id) {
  const auto slot = static_cast<std::uint32_t>(id);
  assert(slot < slots_.size() && slots_[slot] != nullptr);
  slots_[slot] = nullptr;
  free_slots_.push_back(slot);
  --allocated_;
  if (shutting_down_ && allocated_ == 0) finish_shutdown();
}

// ---- shutdown ----------------------------------------------------------------------------

void ServerCore::begin_shutdown() {
  assert_in_loop_thread();
  if (shutting_down_) return;
  shutting_down_ = true;
  wheel::logger()->info("TcpServer: shutting down: {} connections", counts_.connections);
  if (listening_) {
    listener_.data = this;
    uv_close(reinterpret_cast<uv_handle_t*>(&listener_), [](uv_handle_t* h) {
      auto* self = static_cast<ServerCore*>(h->data);
      ::close(self->listen_fd_);  // only now: libuv no longer watches it
      self->listen_fd_ = -1;
      --self->open_handles_;
    });
  }
  listening_ = false;
  if (spare_fd_ >= 0) ::close(spare_fd_);
  spare_fd_ = -1;
  if (signals_) {
    close_handle(&sigint_);
    close_handle(&sigterm_);
    signals_ = false;
  }
  handler_.on_shutdown();
  const std::string goodbye(handler_.goodbye());
  for (Connection* c : slots_) {
    if (c != nullptr && !c->closing()) c->close_with(goodbye, CloseReason::kShutdown);
  }
  if (allocated_ == 0) return finish_shutdown();
  // Clients that do not take their last words in time are cut off.
  const auto grace = static_cast<std::uint64_t>(options_.shutdown_grace.count());
  uv_update_time(loop_);  // saying goodbye to many connections takes a while: count from now
  const int rc = uv_timer_start(
      &force_close_timer_,
      [](uv_timer_t* t) { static_cast<ServerCore*>(t->data)->force_close_all(); }, grace, 0);
  if (rc != 0) force_close_all();
}

void ServerCore::force_close_all() {
  free_released();  // those only wait for the next turn of the loop: not "still closing"
  if (allocated_ > 0) {
    wheel::logger()->warn(
        "TcpServer: {} connections still closing after the grace period, closing them", allocated_);
  }
  for (Connection* c : slots_) {
    if (c != nullptr) c->abort(CloseReason::kShutdown);
  }
}

void ServerCore::finish_shutdown() {
  assert_in_loop_thread();
  if (finished_) return;
  finished_ = true;
  timer_->close();  // tasks not run are destroyed here, unrun
  free_released();  // the reaper closes below
  close_handle(&reaper_);
  connections_poll_.data = this;
  uv_close(reinterpret_cast<uv_handle_t*>(&connections_poll_), [](uv_handle_t* h) {
    auto* self = static_cast<ServerCore*>(h->data);
    ::close(std::exchange(self->epoll_fd_, -1));  // only now: libuv no longer watches it
    --self->open_handles_;
  });
  {
    std::lock_guard<std::mutex> lock(shutdown_mutex_);
    shutdown_async_open_ = false;
  }
  close_handle(&shutdown_async_);
  close_handle(&force_close_timer_);
  close_handle(&drain_timer_);
}

}  // namespace wheel::net
