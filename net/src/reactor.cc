// SPDX-License-Identifier: Apache-2.0
#include "reactor.h"

#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <system_error>
#include <utility>

#include "wheel/logger.h"
#include "wheel/net/uv_error.h"

namespace wheel::net {
namespace {

TcpServerOptions validated(TcpServerOptions o) {
  validate(o);
  return o;
}

std::unique_ptr<uv_loop_t> new_loop() {
  auto loop = std::make_unique<uv_loop_t>();
  check_uv(uv_loop_init(loop.get()), "uv_loop_init");
  return loop;
}

}  // namespace

Reactor::Reactor(uv_loop_t* given_loop, TcpServerOptions options, ConnectionHandler& handler)
    : options_(validated(std::move(options))),
      handler_(handler),
      framer_(options_.max_line),
      own_loop_(given_loop == nullptr ? new_loop() : nullptr),
      loop_(given_loop == nullptr ? own_loop_.get() : given_loop),
      acceptor_(loop_, *this, counts_),
      read_buffer_(new char[kReadBufferSize]) {
  try {
    timer_ = std::make_unique<LoopTimer>(loop_, options_.timer);
    timer_->set_turn_hooks({[this] { in_timer_turn_ = true; }, [this] { flush_turn_batches(); }});
    detector_ = std::make_unique<IdleDetector>(*timer_, static_cast<IdleDetector::Owner&>(*this),
                                               IdleDetector::Options{options_.observe_output});
    watch_idle_ = options_.idle.reader.count() > 0 || options_.idle.writer.count() > 0 ||
                  options_.idle.all.count() > 0;
    init_handle(
        uv_async_init(loop_, &shutdown_async_,
                      [](uv_async_t* a) { static_cast<Reactor*>(a->data)->begin_shutdown(); }),
        "uv_async_init");
    shutdown_async_.data = this;
    shutdown_async_open_ = true;
    init_handle(uv_timer_init(loop_, &shutdown_timer_), "uv_timer_init");
    shutdown_timer_.data = this;
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
    check_uv(uv_poll_start(&connections_poll_, UV_READABLE, &Reactor::on_connections_ready),
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

Reactor::~Reactor() {
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
  assert(stopped() && "on a given loop, run it until stopped() before destroying");
}

void Reactor::init_handle(int rc, const char* what) {
  check_uv(rc, what);
  ++open_handles_;
}

void Reactor::close_handle(void* handle) {
  auto* h = static_cast<uv_handle_t*>(handle);
  h->data = this;
  uv_close(h, [](uv_handle_t* closed) { --static_cast<Reactor*>(closed->data)->open_handles_; });
}

// ---- connections -------------------------------------------------------------------------

void Reactor::on_accepted(int fd) {
  const std::uint64_t id = table_.reserve();
  auto* c = new Connection(this, id, fd);  // owns fd from here on
  if (!c->start()) {
    table_.give_back(id);
    delete c;
    ++counts_.accept_errors;
    return;
  }
  table_.put(c);
  ++counts_.connections;
  ++counts_.accepted;
  if (watch_idle_) detector_->watch(id, c->idle_, options_.idle);
  handler_.on_open(*c);
}

Connection* Reactor::find(std::uint64_t id) {
  Connection* c = table_.get(id);
  return c != nullptr && !c->closing() ? c : nullptr;
}

IdleWatch* Reactor::find_watch(std::uint64_t id) {
  Connection* c = find(id);
  return c == nullptr ? nullptr : &c->idle_;
}

void Reactor::on_idle(std::uint64_t id, IdleEvent event) {
  assert_in_loop_thread();
  if (Connection* c = find(id)) handler_.on_idle(*c, event);
}

void Reactor::on_connections_ready(uv_poll_t* poll, int status, int) {
  auto* self = static_cast<Reactor*>(poll->data);
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

void Reactor::dispatch(Connection& c, std::string_view bytes) {
  dispatching_ = &c;
  if (options_.framing == Framing::kBytes) {
    handler_.on_data(c, bytes);
  } else {
    std::string_view rest;
    const auto result = framer_.feed(
        c.partial_, bytes,
        [this, &c](std::string_view line) {
          handler_.on_line(c, line);
          return !c.closing() && !c.input_paused();
        },
        &rest);
    if (result == LineFramer::Result::kStopped && !c.closing()) {
      c.partial_.append(rest);  // paused: the lines not handed over wait for resume_input()
    } else if (result == LineFramer::Result::kLineTooLong) {
      wheel::logger()->debug("TcpServer: connection {:#x}: line longer than {} bytes", c.id(),
                             options_.max_line);
      handler_.on_line_too_long(c);
      if (!c.closing()) c.close(CloseReason::kLineTooLong);
    }
  }
  dispatching_ = nullptr;
  if (!batch_.empty()) {
    if (!c.closing()) c.write_now(batch_);
    batch_.clear();
  }
  if (!resumed_.empty()) {
    std::vector<std::uint64_t> ids;
    ids.swap(resumed_);
    for (const std::uint64_t id : ids) {
      if (Connection* r = find(id); r != nullptr && !r->input_paused()) resume_held(*r);
    }
  }
}

void Reactor::resume_held(Connection& c) {
  if (dispatching_ == &c) return;  // the current read goes on by itself
  if (dispatching_ != nullptr) {
    resumed_.push_back(c.id());
    return;
  }
  if (c.partial_.empty()) return;
  std::string held(c.partial_.view());
  c.partial_.clear();
  dispatch(c, held);
}

std::string* Reactor::batch_of(const Connection& c) {
  if (dispatching_ == &c) return &batch_;
  if (!in_timer_turn_) return nullptr;
  const auto [it, added] = turn_batch_index_.try_emplace(&c, turn_batches_.size());
  if (added) turn_batches_.emplace_back(const_cast<Connection*>(&c), std::string());
  return &turn_batches_[it->second].second;
}

std::size_t Reactor::batched_bytes(const Connection& c) const {
  if (dispatching_ == &c) return batch_.size();
  if (!in_timer_turn_) return 0;
  const auto it = turn_batch_index_.find(&c);
  return it == turn_batch_index_.end() ? 0 : turn_batches_[it->second].second.size();
}

void Reactor::flush_turn_batches() {
  // Still batching while writing: a write that fails closes its connection, and what the
  // handler's on_close sends to another connection queues behind that one's batch. A batch
  // leaves the index before its write, so what comes later gets an entry of its own, later.
  for (std::size_t i = 0; i < turn_batches_.size(); ++i) {
    Connection* c = turn_batches_[i].first;
    const std::string bytes = std::move(turn_batches_[i].second);
    turn_batch_index_.erase(c);
    if (!bytes.empty() && !c->closing()) c->write_now(bytes);
  }
  turn_batches_.clear();
  turn_batch_index_.clear();
  in_timer_turn_ = false;
}

void Reactor::on_input_end(Connection& c) {
  handler_.on_input_end(c);
}

void Reactor::on_closing(Connection& c, CloseReason reason) {
  assert_in_loop_thread();
  detector_->unwatch(c.idle_);
  if (dispatching_ == &c) batch_.clear();
  if (const auto it = turn_batch_index_.find(&c); it != turn_batch_index_.end()) {
    turn_batches_[it->second].second.clear();  // a closing connection sends nothing more
  }
  assert(counts_.connections > 0);
  --counts_.connections;
  if (reason == CloseReason::kSlowConsumer) ++counts_.slow_consumers;
  handler_.on_close(c, reason);
}

// ---- closing: the last words within close_grace --------------------------------------------

void Reactor::on_draining(Connection& c) {
  ++counts_.closing;
  const auto grace = static_cast<std::uint64_t>(options_.close_grace.count());
  draining_.emplace_back(c.id(), uv_now(loop_) + grace);
  if (draining_.size() == 1) start_drain_timer(grace);
}

void Reactor::start_drain_timer(std::uint64_t after_ms) {
  uv_timer_start(
      &drain_timer_, [](uv_timer_t* t) { static_cast<Reactor*>(t->data)->on_drain_deadline(); },
      after_ms, 0);
}

void Reactor::on_drained(Connection&) {
  assert(counts_.closing > 0);
  --counts_.closing;
}

void Reactor::on_drain_deadline() {
  const std::uint64_t now = uv_now(loop_);
  while (!draining_.empty() && draining_.front().second <= now) {
    Connection* c = table_.get(draining_.front().first);
    draining_.pop_front();
    if (c == nullptr || !c->draining_) continue;  // done meanwhile (or freed)
    ++counts_.close_grace_expired;
    wheel::logger()->debug("TcpServer: connection {:#x} did not take its last {} bytes in {} ms",
                           c->id(), c->queued_output(), options_.close_grace.count());
    // A reset rather than a FIN: the kernel drops what it still holds for this client too.
    const linger reset{1, 0};
    ::setsockopt(c->fd_, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
    c->release_socket();
  }
  if (!draining_.empty()) start_drain_timer(draining_.front().second - now);
}

void Reactor::release_later(Connection& c) {
  released_.push_back(&c);
  if (released_.size() == 1 && !uv_is_closing(reinterpret_cast<uv_handle_t*>(&reaper_))) {
    uv_idle_start(&reaper_, [](uv_idle_t* idle) {
      uv_idle_stop(idle);
      static_cast<Reactor*>(idle->data)->free_released();
    });
  }
}

void Reactor::free_released() {
  std::vector<Connection*> batch;
  batch.swap(released_);
  for (Connection* c : batch) {
    table_.erase(c->id());
    delete c;
  }
  if (shutting_down_ && table_.size() == 0) finish_shutdown();
}

// ---- shutdown: the goodbyes within shutdown_grace ------------------------------------------

void Reactor::begin_shutdown() {
  assert_in_loop_thread();
  if (shutting_down_) return;
  shutting_down_ = true;
  wheel::logger()->info("TcpServer: shutting down: {} connections", counts_.connections);
  acceptor_.close();
  if (signals_) {
    close_handle(&sigint_);
    close_handle(&sigterm_);
    signals_ = false;
  }
  handler_.on_shutdown();
  const std::string goodbye(handler_.goodbye());
  table_.for_each([&goodbye](Connection* c) {
    if (!c->closing()) c->close_with(goodbye, CloseReason::kShutdown);
  });
  if (table_.size() == 0) return finish_shutdown();
  // Clients that do not take their last words in time are cut off.
  const auto grace = static_cast<std::uint64_t>(options_.shutdown_grace.count());
  uv_update_time(loop_);  // saying goodbye to many connections takes a while: count from now
  const int rc = uv_timer_start(
      &shutdown_timer_, [](uv_timer_t* t) { static_cast<Reactor*>(t->data)->force_close_all(); },
      grace, 0);
  if (rc != 0) force_close_all();
}

void Reactor::force_close_all() {
  free_released();  // those only wait for the next turn of the loop: not "still closing"
  if (finished_) return;
  wheel::logger()->warn(
      "TcpServer: {} connections still closing after the grace period, closing them",
      table_.size());
  table_.for_each([](Connection* c) { c->abort(CloseReason::kShutdown); });
}

void Reactor::finish_shutdown() {
  assert_in_loop_thread();
  if (finished_) return;
  finished_ = true;
  acceptor_.close();
  timer_->close();  // tasks not run are destroyed here, unrun
  free_released();  // the reaper closes below
  close_handle(&reaper_);
  connections_poll_.data = this;
  uv_close(reinterpret_cast<uv_handle_t*>(&connections_poll_), [](uv_handle_t* h) {
    auto* self = static_cast<Reactor*>(h->data);
    ::close(std::exchange(self->epoll_fd_, -1));  // only now: libuv no longer watches it
    --self->open_handles_;
  });
  {
    std::lock_guard<std::mutex> lock(shutdown_mutex_);
    shutdown_async_open_ = false;
  }
  close_handle(&shutdown_async_);
  close_handle(&shutdown_timer_);
  close_handle(&drain_timer_);
}

}  // namespace wheel::net
