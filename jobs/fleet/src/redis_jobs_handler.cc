// SPDX-License-Identifier: Apache-2.0
#include "wheel/jobs/fleet/redis_jobs_handler.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <csignal>

#include "redis_handler_client.h"
#include "redis_tube_order.h"
#include "wheel/jobs/beanstalk/beanstalk_reply.h"
#include "wheel/jobs/fleet/store_errors.h"
#include "wheel/jobs/server/drain_signal.h"
#include "wheel/logger.h"
#include "wheel/redis/redis_errors.h"

namespace wheel::jobs {

namespace bs = beanstalk;

namespace {

void close_handle(uv_signal_t* h) {
  uv_close(reinterpret_cast<uv_handle_t*>(h),
           [](uv_handle_t* handle) { delete reinterpret_cast<uv_signal_t*>(handle); });
}

}  // namespace

RedisJobsHandler::RedisJobsHandler(RedisStore& store, RedisClient& events, RedisJobsOptions options)
    : store_(store),
      events_(events),
      options_(std::move(options)),
      tube_order_(std::make_unique<RedisTubeOrder>()) {
  if (options_.max_queued_output < 2 || options_.max_in_flight_bytes == 0) {
    throw std::invalid_argument(
        "RedisJobsHandler: max_queued_output must be at least 2, max_in_flight_bytes at least 1");
  }
  if (options_.min_scan_interval.count() <= 0 ||
      options_.max_scan_interval < options_.min_scan_interval) {
    throw std::invalid_argument(
        "RedisJobsHandler: scan intervals must be 0 < min_scan_interval <= max_scan_interval");
  }
}

RedisJobsHandler::~RedisJobsHandler() {
  if (server_ != nullptr) store_.client().set_after_read(nullptr);
  cancel_timeouts();
}

std::int64_t RedisJobsHandler::local_ms() const {
  // The timer's clock (the steady clock read afresh, or a test's ManualClock), in ms.
  if (timer_ != nullptr) return std::chrono::duration_cast<Millis>(timer_->clock_now()).count();
  return static_cast<std::int64_t>(uv_hrtime() / 1'000'000);
}
std::int64_t RedisJobsHandler::to_local(std::int64_t redis_ms) const {
  return redis_ms - clock_offset_;
}
void RedisJobsHandler::learn_clock(std::int64_t redis_now) {
  if (redis_now <= 0) return;
  clock_offset_ = redis_now - local_ms();
  clock_known_ = true;
}

void RedisJobsHandler::attach(net::TcpServer& server, net::LoopTimer* timer) {
  server_ = &server;
  if (timer == nullptr) {
    TimerOptions tick;
    tick.tick_duration = std::chrono::milliseconds(1);  // due times are Redis's milliseconds
    own_timer_ = std::make_unique<net::LoopTimer>(server.loop(), tick);
    timer = own_timer_.get();
  }
  timer_ = timer;
  started_ms_ = local_ms();
  schedule_scan(0);
  drain_ = watch_drain_signal<[](void* self) {
    logger()->info("wheel-jobs: SIGUSR1: drain mode, puts are refused with DRAINING");
    static_cast<RedisJobsHandler*>(self)->draining_ = true;
  }>(server.loop(), this);
  store_.client().set_after_read([this] { write_gathered(); });
  events_.subscribe(store_.event_channel(), [this](std::string_view m) { on_event(m); });
  // Events published while the subscription was down are lost: after a reconnect, look (once
  // the subscription is likely back: the shortest scan gap later).
  events_.set_on_connect([this] {
    for (auto& [tube, w] : waiters_) w.empty_until = -1;
    if (events_.connects() > 0) schedule_scan(options_.min_scan_interval.count());
  });
}

RedisJobsCounters RedisJobsHandler::counters() const {
  RedisJobsCounters c = counters_;
  c.connections = clients_.size();
  return c;
}

RedisJobsHandler::Client* RedisJobsHandler::find(std::uint64_t conn) {
  auto it = clients_.find(conn);
  return it == clients_.end() ? nullptr : it->second.get();
}

std::string RedisJobsHandler::store_failure_reply(const StoreResult& r) {
  std::string out;
  if (r.status == StoreStatus::kNotFound) {
    bs::append_reply(out, bs::Reply::kNotFound);
  } else if (r.status == StoreStatus::kOutOfMemory) {
    bs::append_reply(out, bs::Reply::kOutOfMemory);
  } else {
    note_internal_error(r);
    bs::append_reply(out, bs::Reply::kInternalError);
  }
  return out;
}

void RedisJobsHandler::note_internal_error(const StoreResult& r) {
  const InternalErrorCause cause = store_error_cause(r.error);
  const auto i = static_cast<std::size_t>(cause);
  if (cause == InternalErrorCause::kRedisError) return internal_errors_.count_only(i);
  internal_errors_.note(i, r.error, local_ms());
}

void RedisJobsHandler::on_open(net::Connection& c) {
  clients_.emplace(c.id(), std::make_unique<Client>(c.id(), options_.max_job_size));
  tube_order_->name("default");  // used
  tube_order_->name("default");  // watched
  ++counters_.total_connections;
}

void RedisJobsHandler::on_data(net::Connection& c, std::string_view bytes) {
  Client* client = find(c.id());
  if (client == nullptr || client->quit) return;
  if ((client->busy || !client->slots.empty() || client->held) &&
      client->input.size() + bytes.size() > options_.max_held_input + options_.max_job_size) {
    logger()->warn("wheel-jobs: {} sent over {} bytes while requests were with Redis; closing",
                   c.peer(), options_.max_held_input + options_.max_job_size);
    c.close();
    return;
  }
  client->input.append(bytes);
  pump(client);
}

// Parses and runs requests while it may: pipelined ones (put, delete) up to kMaxPipelined in
// flight; any other waits (held) until they all answered, then runs alone.
void RedisJobsHandler::pump(Client* client) {
  if (client->pumping) return;
  client->pumping = true;
  const std::uint64_t conn = client->conn;
  std::string out;
  std::size_t used = 0;
  std::string_view input = client->input;
  const std::size_t low = options_.max_queued_output / 2;
  while (!client->busy && !client->quit) {
    // Replies not yet taken by the kernel past the bound: the rest waits, the socket is not read,
    // until the client took all but half (on_output_below).
    if (client->blocked || out.size() + backlog(client) >= options_.max_queued_output) {
      if (!client->blocked) {
        client->blocked = true;
        if (net::Connection* c = server_ == nullptr ? nullptr : server_->find(conn)) {
          c->pause_input();
          if (find(conn) == nullptr) return;  // the epoll set refused: closed
        }
      }
      break;
    }
    if (client->held) {
      if (!client->slots.empty()) break;
      bs::Request request = std::move(*client->held);
      client->held.reset();
      dispatch(client, std::move(request), out);
      if (find(conn) == nullptr) return;  // its connection closed meanwhile
      continue;
    }
    if (used >= input.size() || client->slots.size() >= kMaxPipelined ||
        client->in_flight_bytes >= options_.max_in_flight_bytes) {
      break;
    }
    bs::RequestParser::Step step;
    try {
      step = client->parser.feed(input.substr(used));
    } catch (const std::bad_alloc&) {
      client->parser.reset();
      std::string oom;
      bs::append_reply(oom, bs::Reply::kOutOfMemory);
      reply_in_order(client, out, oom);
      used = input.size();
      break;
    }
    used += step.consumed;
    if (!step.request) continue;
    if (!pipelined(*step.request) && !client->slots.empty()) {
      if (overlaps(client, *step.request)) {
        dispatch_in_slot(client, std::move(*step.request));
        if (find(conn) == nullptr) return;
        continue;
      }
      client->held = std::move(step.request);
    } else {
      dispatch(client, std::move(*step.request), out);
      if (find(conn) == nullptr) return;
    }
  }
  client->input.erase(0, used);
  client->pumping = false;
  if (!out.empty() && !send(client, out)) return;
  if (client->blocked) {
    if (net::Connection* c = server_ == nullptr ? nullptr : server_->find(conn)) {
      c->notify_output_below(low);
    }
  }
  maybe_close(client);
}

std::size_t RedisJobsHandler::backlog(Client* client) {
  net::Connection* c = server_ == nullptr ? nullptr : server_->find(client->conn);
  return client->gathered.size() + (c == nullptr ? 0 : c->queued_output());
}

void RedisJobsHandler::on_output_below(net::Connection& c) {
  Client* client = find(c.id());
  if (client == nullptr || !client->blocked) return;
  const std::size_t low = options_.max_queued_output / 2;
  if (backlog(client) > low) return c.notify_output_below(low);
  client->blocked = false;
  c.resume_input();
  pump(client);
}

bool RedisJobsHandler::send(Client* client, std::string_view bytes) {
  const std::uint64_t conn = client->conn;
  if (server_ == nullptr) return true;
  // One read from Redis brings the replies of a pipelined batch (a worker's delete, then the
  // claim of its next reserve): what they answer goes out in one write per client after it.
  if (store_.client().delivering()) {
    if (client->gathered.empty()) gathered_.push_back(conn);
    client->gathered.append(bytes);
    return true;
  }
  if (net::Connection* c = server_->find(conn)) c->send(bytes);
  return find(conn) != nullptr;  // a failed write closes the connection at once (on_close)
}

void RedisJobsHandler::write_gathered() {
  std::vector<std::uint64_t> conns;
  conns.swap(gathered_);
  for (const std::uint64_t conn : conns) {
    if (Client* client = find(conn)) write_gathered(client);
  }
}

bool RedisJobsHandler::write_gathered(Client* client) {
  if (client->gathered.empty()) return true;
  const std::uint64_t conn = client->conn;
  std::string out;
  out.swap(client->gathered);
  if (net::Connection* c = server_->find(conn)) c->send(out);
  return find(conn) != nullptr;
}

void RedisJobsHandler::maybe_close(Client* client) {
  if (server_ == nullptr || client->busy || !client->slots.empty() || client->held) return;
  if (client->quit || (client->input_ended && client->input.empty())) {
    if (!write_gathered(client)) return;  // its last replies before the close
    if (net::Connection* c = server_->find(client->conn)) c->close();
  }
}

void RedisJobsHandler::finish(std::uint64_t conn, std::string reply) {
  Client* client = find(conn);
  if (client == nullptr) return;
  client->busy = false;
  if (client->reply_slot) {
    const std::uint64_t seq = *client->reply_slot;
    client->reply_slot.reset();
    return complete(conn, seq, std::move(reply));
  }
  if (send(client, reply)) pump(client);
}

void RedisJobsHandler::on_input_end(net::Connection& c) {
  Client* client = find(c.id());
  if (client == nullptr ||
      (!client->busy && client->slots.empty() && !client->held && client->input.empty()) ||
      client->waiting) {
    c.close(net::CloseReason::kPeerClosed);  // beanstalkd drops a waiting client that hangs up
    return;
  }
  client->input_ended = true;
}

void RedisJobsHandler::on_close(net::Connection& c, net::CloseReason) {
  auto it = clients_.find(c.id());
  if (it == clients_.end()) return;
  std::unique_ptr<Client> client = std::move(it->second);
  clients_.erase(it);
  tube_order_->unname(client->used);
  for (const std::string& tube : client->watched) tube_order_->unname(tube);
  if (client->waiting) end_wait(client.get());
  // As beanstalkd: the jobs a client held go back to ready at once, with their priority.
  if (!stopping_) {
    for (auto& [id, lease] : client->leases) {
      ++counters_.released_on_close;
      store_.release(id, lease.token, std::nullopt, Millis(0), false, [this](ChangeResult&& r) {
        if (r.status == StoreStatus::kOk) metrics_.count(ChangeCounter::kHangUp);
      });
    }
  }
}

void RedisJobsHandler::on_shutdown() {
  stopping_ = true;
  draining_ = true;
  leave();
  cancel_timeouts();
  if (own_timer_) own_timer_->close();
  timer_ = nullptr;  // no new timeout: what comes back from Redis now schedules nothing
  if (drain_ != nullptr) {
    close_handle(drain_);
    drain_ = nullptr;
  }
}

net::LoopTimer::Handle RedisJobsHandler::at_local(std::int64_t at, std::function<void()> task) {
  if (timer_ == nullptr) return {};
  // On the timer's own clock, in ns: at `at` ms exactly, not from local_ms()'s truncated now.
  const std::chrono::nanoseconds wait = Millis(at) - timer_->clock_now();
  return timer_->new_timeout(std::move(task), std::max(wait, std::chrono::nanoseconds(0)));
}

net::LoopTimer::Handle RedisJobsHandler::after(Millis delay, std::function<void()> task) {
  if (timer_ == nullptr) return {};
  return timer_->new_timeout(std::move(task), delay);
}

void RedisJobsHandler::cancel(net::LoopTimer::Handle& handle) {
  if (handle && timer_ != nullptr) timer_->cancel(handle);
  handle.reset();
}

void RedisJobsHandler::cancel_timeouts() {
  if (timer_ == nullptr) return;
  cancel(scan_timer_);
  for (auto& [conn, client] : clients_) {
    cancel(client->timeout_timer);
    cancel(client->soon_timer);
  }
  for (auto& [tube, w] : waiters_) cancel(w.timer);
  for (auto& [at, group] : retry_groups_) cancel(group.timer);
}

}  // namespace wheel::jobs
