// SPDX-License-Identifier: Apache-2.0
#include "wheel/jobs/fleet/redis_backend.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>
#include <variant>

#include "redis_handler_client.h"
#include "redis_tube_order.h"
#include "wheel/jobs/beanstalk/beanstalk_reply.h"
#include "wheel/jobs/fleet/store_errors.h"
#include "wheel/jobs/server/beanstalk_front.h"
#include "wheel/logger.h"
#include "wheel/redis/redis_errors.h"

namespace wheel::jobs {

namespace bs = beanstalk;

RedisBackend::RedisBackend(RedisStore& store, RedisClient& events, RedisJobsOptions options)
    : store_(store),
      events_(events),
      options_(std::move(options)),
      tube_order_(std::make_unique<RedisTubeOrder>()) {
  if (options_.max_queued_output < 2 || options_.max_in_flight_bytes == 0) {
    throw std::invalid_argument(
        "RedisBackend: max_queued_output must be at least 2, max_in_flight_bytes at least 1");
  }
  if (options_.min_scan_interval.count() <= 0 ||
      options_.max_scan_interval < options_.min_scan_interval) {
    throw std::invalid_argument(
        "RedisBackend: scan intervals must be 0 < min_scan_interval <= max_scan_interval");
  }
}

RedisBackend::~RedisBackend() {
  if (front_ != nullptr) store_.link().set_after_read(nullptr);
  cancel_timeouts();
}

std::int64_t RedisBackend::local_ms() const {
  // The timer's clock (the steady clock read afresh, or a test's ManualClock), in ms.
  if (timer_ != nullptr) return std::chrono::duration_cast<Millis>(timer_->clock_now()).count();
  return static_cast<std::int64_t>(uv_hrtime() / 1'000'000);
}
std::int64_t RedisBackend::to_local(std::int64_t redis_ms) const {
  return redis_ms - clock_offset_;
}
void RedisBackend::learn_clock(std::int64_t redis_now) {
  if (redis_now <= 0) return;
  clock_offset_ = redis_now - local_ms();
  clock_known_ = true;
}

void RedisBackend::attach(BeanstalkFront& front, net::LoopTimer& timer) {
  front_ = &front;
  timer_ = &timer;
  started_ms_ = local_ms();
  schedule_scan(0);
  store_.link().set_after_read([this] { front_->write_gathered(); });
  for (const std::string& channel : store_.event_channels()) {  // one per shard
    events_.subscribe(channel, [this](std::string_view m) { on_event(m); });
  }
  // Events published while the subscription was down are lost: after a reconnect, look (once
  // the subscription is likely back: the shortest scan gap later).
  events_.set_on_connect([this] {
    for (auto& [tube, w] : waiters_) w.empty_until = -1;
    if (events_.connects() > 0) schedule_scan(options_.min_scan_interval.count());
  });
}

bool RedisBackend::gathering() const {
  // One read from Redis brings the replies of a pipelined batch (a worker's delete, then the
  // claim of its next reserve): what they answer goes out in one write per client after it.
  return store_.link().delivering();
}

RedisJobsCounters RedisBackend::counters() const {
  RedisJobsCounters c = counters_;
  c.connections = clients_.size();
  return c;
}

RedisBackend::Client* RedisBackend::find(std::uint64_t conn) {
  auto it = clients_.find(conn);
  return it == clients_.end() ? nullptr : it->second.get();
}

std::string RedisBackend::store_failure_reply(const StoreResult& r) {
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

void RedisBackend::note_internal_error(const StoreResult& r) {
  const InternalErrorCause cause = store_error_cause(r.error);
  const auto i = static_cast<std::size_t>(cause);
  if (cause == InternalErrorCause::kRedisError) return internal_errors_.count_only(i);
  internal_errors_.note(i, r.error, local_ms());
}

void RedisBackend::open(std::uint64_t conn, const SessionTubes& tubes) {
  clients_.emplace(conn, std::make_unique<Client>(conn, tubes));
  tube_order_->name("default");  // used
  tube_order_->name("default");  // watched
  ++counters_.total_connections;
}

bool RedisBackend::change_tubes(std::uint64_t conn, TubeChange change, std::string_view tube) {
  const Client* client = find(conn);
  if (client == nullptr) return true;
  const std::string name(tube);
  switch (change) {
    case TubeChange::kUse:
      tube_order_->name(name);
      tube_order_->unname(client->used());
      break;
    case TubeChange::kWatch:
      tube_order_->name(name);
      break;
    case TubeChange::kIgnore:
      tube_order_->unname(name);
      break;
  }
  return true;
}

Admit RedisBackend::admit(std::uint64_t conn, const bs::Request& request, std::size_t in_flight) {
  if (pipelined(request) || in_flight == 0) return Admit::kNow;
  const Client* client = find(conn);
  return client != nullptr && overlaps(client, request) ? Admit::kNow : Admit::kAfterEarlier;
}

Flow RedisBackend::run(std::uint64_t conn, bs::Request&& request, ReplySlot slot) {
  Client* client = find(conn);
  if (client == nullptr) {
    slot.complete({});
    return Flow::kGoOn;
  }
  if (pipelined(request)) {
    bs::count_command(commands_, request);
    dispatch_pipelined(client, std::move(request), slot);
    return Flow::kGoOn;
  }
  const bool reserve = std::holds_alternative<bs::Reserve>(request) ||
                       std::holds_alternative<bs::ReserveWithTimeout>(request);
  client->slot = slot;
  std::string out;
  dispatch(client, std::move(request), out);
  client = find(conn);
  if (client == nullptr) return Flow::kGoOn;
  if (!client->busy) {
    // Answered at once (or its store call failed fast and finish() answered it).
    if (client->slot) std::exchange(client->slot, {}).complete(out);
    return Flow::kGoOn;
  }
  return reserve ? Flow::kWaits : Flow::kBarrier;
}

void RedisBackend::finish(std::uint64_t conn, std::string reply) {
  Client* client = find(conn);
  if (client == nullptr) return;
  client->busy = false;
  if (client->slot) std::exchange(client->slot, {}).complete(reply);
}

void RedisBackend::close(std::uint64_t conn) {
  auto it = clients_.find(conn);
  if (it == clients_.end()) return;
  std::unique_ptr<Client> client = std::move(it->second);
  clients_.erase(it);
  tube_order_->unname(client->used());
  for (const std::string& tube : client->watched()) tube_order_->unname(tube);
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

void RedisBackend::shutdown(std::function<void()> done) {
  stopping_ = true;
  draining_ = true;
  shutdown_also_ = std::move(done);
  leave();
  cancel_timeouts();
  timer_ = nullptr;  // no new timeout: what comes back from Redis now schedules nothing
}

void RedisBackend::detach() {
  cancel_timeouts();
  timer_ = nullptr;
}

net::LoopTimer::Handle RedisBackend::at_local(std::int64_t at, std::function<void()> task) {
  if (timer_ == nullptr) return {};
  // On the timer's own clock, in ns: at `at` ms exactly, not from local_ms()'s truncated now.
  const std::chrono::nanoseconds wait = Millis(at) - timer_->clock_now();
  return timer_->new_timeout(std::move(task), std::max(wait, std::chrono::nanoseconds(0)));
}

net::LoopTimer::Handle RedisBackend::after(Millis delay, std::function<void()> task) {
  if (timer_ == nullptr) return {};
  return timer_->new_timeout(std::move(task), delay);
}

void RedisBackend::cancel(net::LoopTimer::Handle& handle) {
  if (handle && timer_ != nullptr) timer_->cancel(handle);
  handle.reset();
}

void RedisBackend::cancel_timeouts() {
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
