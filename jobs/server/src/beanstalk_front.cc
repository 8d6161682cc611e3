// SPDX-License-Identifier: Apache-2.0
#include "wheel/jobs/server/beanstalk_front.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "beanstalk_front_conn.h"
#include "wheel/jobs/beanstalk/beanstalk_protocol.h"
#include "wheel/jobs/beanstalk/beanstalk_reply.h"
#include "wheel/jobs/beanstalk/beanstalk_stats.h"
#include "wheel/jobs/server/drain_signal.h"
#include "wheel/jobs/server/session_tubes.h"
#include "wheel/logger.h"

namespace wheel::jobs {

namespace bs = beanstalk;

void ReplySlot::complete(std::string_view reply) const {
  front_->fill(conn_, seq_, reply);
}

void ReplySlot::complete_batch(std::span<const SlotEnd> batch, std::string_view replies) {
  if (!batch.empty()) batch.front().slot.front_->fill_batch(batch, replies);
}

void ReplySlot::abort() const {
  front_->abort(conn_);
}

BeanstalkFront::BeanstalkFront(BeanstalkBackend& backend, BeanstalkFrontOptions options)
    : backend_(backend), options_(options) {
  if (options.max_job_size > bs::kMaxMaxJobSize) {
    throw std::invalid_argument("BeanstalkFrontOptions: max_job_size over " +
                                std::to_string(bs::kMaxMaxJobSize));
  }
  if (options.max_held_input == 0) {
    throw std::invalid_argument("BeanstalkFrontOptions: max_held_input must be at least 1");
  }
  if (options.max_watched == 0) {
    throw std::invalid_argument("BeanstalkFrontOptions: max_watched must be at least 1");
  }
  if (options.max_queued_output < 2) {
    throw std::invalid_argument("BeanstalkFrontOptions: max_queued_output must be at least 2");
  }
}

BeanstalkFront::~BeanstalkFront() {
  if (server_ != nullptr) backend_.detach();
}

void BeanstalkFront::attach(net::TcpServer& server, net::LoopTimer* timer) {
  server_ = &server;
  if (timer == nullptr) {
    TimerOptions tick;
    tick.tick_duration = std::chrono::milliseconds(1);  // both backends' deadlines are in ms
    own_timer_ = std::make_unique<net::LoopTimer>(server.loop(), tick);
    timer = own_timer_.get();
  }
  drain_ = watch_drain_signal<[](void* self) {
    auto* front = static_cast<BeanstalkFront*>(self);
    logger()->info("{}: SIGUSR1: drain mode, puts are refused with DRAINING",
                   front->options_.log_name);
    front->backend_.set_draining();
  }>(server.loop(), this);
  backend_.attach(*this, *timer);
}

BeanstalkFront::Conn* BeanstalkFront::find(std::uint64_t conn) const {
  // Most lookups in a row are of one connection (its requests, then their replies).
  if (last_ != nullptr && last_->id == conn) return last_;
  auto it = conns_.find(conn);
  if (it == conns_.end()) return nullptr;
  last_ = it->second.get();
  return last_;
}

void BeanstalkFront::on_open(net::Connection& c) {
  auto conn = std::make_unique<Conn>(c.id(), options_.max_job_size, options_.max_watched);
  const SessionTubes& tubes = conn->tubes;
  conns_.emplace(c.id(), std::move(conn));
  backend_.open(c.id(), tubes);
}

void BeanstalkFront::on_data(net::Connection& c, std::string_view bytes) {
  Conn* conn = find(c.id());
  if (conn == nullptr || conn->quit) return;
  if (conn->parked || conn->blocked) {
    // A request the backend parked, or the output over its bound: the client is not read until
    // it may go on (at most this read is held beyond what was held).
    conn->input.append(bytes);
    c.pause_input();
    return;
  }
  const InFlightLimits limits = backend_.in_flight_limits();
  const bool stopped = conn->barrier || conn->held ||
                       conn->replies.in_flight() >= limits.requests ||
                       conn->replies.in_flight_bytes() >= limits.put_bytes;
  if (stopped && conn->input.size() + bytes.size() > options_.max_held_input) {
    logger()->warn("{}: {} sent over {} bytes while its requests waited; closing",
                   options_.log_name, c.peer(), options_.max_held_input);
    c.close();
    return;
  }
  conn->input.append(bytes);
  pump(conn);
  backend_.after_batch();
}

void BeanstalkFront::pump(Conn* conn) {
  if (conn->pumping) return;
  conn->pumping = true;
  const std::uint64_t id = conn->id;
  const InFlightLimits limits = backend_.in_flight_limits();
  net::Connection* c = server_ == nullptr ? nullptr : server_->find(id);
  std::size_t used = 0;
  while (!conn->quit && !conn->barrier && !conn->parked) {
    // Replies are built before the kernel takes them: past the bound, the rest of the input
    // waits (and the socket is not read) until the client has taken most of them.
    if (conn->blocked) break;
    if (c != nullptr && backlog(conn, c) >= options_.max_queued_output) {
      conn->blocked = true;
      c->pause_input();
      if (find(id) == nullptr) return;  // the epoll set refused: closed
      break;
    }
    // The request is looked at where it is (held, or in the parser's step), not moved about.
    const bool from_held = conn->held.has_value();
    if (!from_held && (used >= conn->input.size() || conn->replies.in_flight() >= limits.requests ||
                       conn->replies.in_flight_bytes() >= limits.put_bytes)) {
      break;
    }
    bool oom = false;
    bs::RequestParser::Step step = [&]() -> bs::RequestParser::Step {
      if (from_held) return {};
      try {
        return conn->parser.feed(std::string_view(conn->input).substr(used));
      } catch (const std::bad_alloc&) {
        oom = true;
        return {};
      }
    }();
    if (oom) {
      conn->parser.reset();
      used = conn->input.size();
      std::string reply;
      bs::append_reply(reply, bs::Reply::kOutOfMemory);
      conn->replies.open_complete(reply);
      break;
    }
    if (!from_held) {
      used += step.consumed;
      if (!step.request) continue;
    }
    bs::Request& next = from_held ? *conn->held : *step.request;
    if (SessionTubes::runs(next)) {  // the front's own (never held): answered now, in its place
      run_session(conn, next);
      continue;
    }
    const Admit admit = backend_.admit(id, next, conn->replies.in_flight());
    if (admit == Admit::kAfterEarlier && conn->replies.in_flight() > 0) {
      if (!from_held) conn->held = std::move(next);
      break;
    }
    if (admit == Admit::kLater) {
      if (!from_held) conn->held = std::move(next);
      conn->parked = true;
      if (c != nullptr) c->pause_input();
      break;
    }
    if (from_held) {
      bs::Request request = std::move(*conn->held);
      conn->held.reset();
      start(conn, std::move(request));
    } else {
      start(conn, std::move(next));
    }
    if (find(id) == nullptr) return;  // its connection closed meanwhile
  }
  conn->input.erase(0, used);
  backend_.end_batch(id);
  if (find(id) == nullptr) return;
  conn->pumping = false;
  if (!write_ready(conn)) return;  // may close the connection (a failed write)
  if (conn->blocked) watch_output(conn);
  maybe_close(conn);
}

void BeanstalkFront::start(Conn* conn, bs::Request&& request) {
  const std::uint64_t id = conn->id;
  std::size_t put_bytes = 0;
  if (const auto* put = std::get_if<bs::Put>(&request)) put_bytes = put->body.size();
  if (std::holds_alternative<bs::Quit>(request)) conn->quit = true;
  const std::uint64_t seq = conn->replies.open(put_bytes);
  const Flow flow = backend_.run(id, std::move(request), ReplySlot(this, id, seq));
  conn = find(id);
  if (conn == nullptr || flow == Flow::kGoOn) return;
  if (conn->replies.in_flight(seq)) {
    conn->barrier = seq;
    conn->waits = flow == Flow::kWaits;
  }
}

void BeanstalkFront::run_session(Conn* conn, const bs::Request& request) {
  bs::count_command(backend_.command_counts(), request);
  std::string reply;
  const std::uint64_t id = conn->id;
  conn->tubes.run(
      request,
      [this, id](TubeChange change, std::string_view tube) {
        return backend_.change_tubes(id, change, tube);
      },
      reply);
  conn->replies.open_complete(reply);
}

void BeanstalkFront::fill(std::uint64_t id, std::uint64_t seq, std::string_view reply) {
  Conn* conn = find(id);
  if (conn == nullptr || !conn->replies.complete(seq, reply)) return;
  if (conn->barrier == seq) {
    conn->barrier.reset();
    conn->waits = false;
  }
  filled(conn);
}

void BeanstalkFront::fill_batch(std::span<const SlotEnd> batch, std::string_view replies) {
  const ReplySlot& first = batch.front().slot;
  Conn* conn = find(first.conn_);
  if (conn == nullptr) return;
  // The usual case: the batch is the connection's oldest slots, none complete yet: its replies
  // go to the bytes to write in one piece.
  bool oldest = conn->replies.oldest_in_flight(batch.size());
  const std::uint64_t head = conn->replies.head();
  for (std::size_t i = 0; oldest && i < batch.size(); ++i) {
    const ReplySlot& s = batch[i].slot;
    oldest = s.front_ == this && s.conn_ == conn->id && s.seq_ == head + i;
  }
  if (!oldest) {
    std::size_t from = 0;
    for (const SlotEnd& e : batch) {
      e.slot.complete(replies.substr(from, e.end - from));
      from = e.end;
    }
    return;
  }
  conn->replies.complete_oldest(batch.size(), replies.substr(0, batch.back().end));
  if (conn->barrier && !conn->replies.in_flight(*conn->barrier)) {
    conn->barrier.reset();
    conn->waits = false;
  }
  filled(conn);
}

void BeanstalkFront::filled(Conn* conn) {
  if (conn->pumping) return;  // pump() writes them when it is done
  // One read of the backend's completes many: written, and the connection pumped, after it.
  if (backend_.gathering()) return list(conn);
  if (!write_ready(conn)) return;
  pump(conn);  // a barrier may be over, or there is room in flight
}

void BeanstalkFront::abort(std::uint64_t id) {
  if (server_ == nullptr) return;
  // The reply must not go out: the client sees the connection close instead.
  if (net::Connection* c = server_->find(id)) c->close();
}

void BeanstalkFront::maybe_close(Conn* conn) {
  if (server_ == nullptr || conn->pumping || !(conn->quit || conn->input_ended)) return;
  if (conn->held || conn->parked) return;
  // A client that hung up while its reserve waits is not waited for (beanstalkd drops it).
  const std::size_t owed = conn->replies.in_flight() - (conn->waits && !conn->quit ? 1 : 0);
  if (owed > 0) return;
  if (!conn->quit && conn->blocked) return;     // more input to run once the output drains
  if (backend_.gathering()) return list(conn);  // its last replies first: write_gathered()
  if (!conn->gathered.empty() && !send(conn, {})) return;
  if (net::Connection* c = server_->find(conn->id)) {
    c->close(conn->quit ? net::CloseReason::kLocal : net::CloseReason::kPeerClosed);
  }
}

void BeanstalkFront::on_input_end(net::Connection& c) {
  Conn* conn = find(c.id());
  if (conn == nullptr) {
    c.close(net::CloseReason::kPeerClosed);
    return;
  }
  conn->input_ended = true;
  maybe_close(conn);
}

void BeanstalkFront::on_close(net::Connection& c, net::CloseReason) {
  auto it = conns_.find(c.id());
  if (it == conns_.end()) return;
  if (last_ == it->second.get()) last_ = nullptr;
  // Its slots still open are forgotten: their completion finds no connection. Its tubes stay
  // readable until the backend's close() returns.
  const std::unique_ptr<Conn> gone = std::move(it->second);
  conns_.erase(it);
  backend_.close(c.id());
}

void BeanstalkFront::on_shutdown() {
  backend_.shutdown([this] {
    if (shutdown_also_) shutdown_also_();
  });
  if (own_timer_) own_timer_->close();
  if (drain_ != nullptr) {
    uv_close(reinterpret_cast<uv_handle_t*>(drain_),
             [](uv_handle_t* h) { delete reinterpret_cast<uv_signal_t*>(h); });
    drain_ = nullptr;
  }
}

}  // namespace wheel::jobs
