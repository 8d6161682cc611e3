// SPDX-License-Identifier: Apache-2.0
// RedisClient: its connection (connect, log in, select, reconnect with backoff), start and
// stop, and the hooks at the end of a read and of a loop turn (batching). Commands and their
// timeouts: redis_client_commands.cc; scripts and WAIT: redis_client_scripts.cc; pub/sub:
// redis_client_pubsub.cc; the libuv adapter: redis_uv.cc.
#include "wheel/redis/redis_client.h"

#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <stdexcept>

#include "redis_client_internal.h"
#include "redis_uv.h"
#include "wheel/logger.h"

namespace wheel::jobs {
namespace {

void close_timer(uv_timer_t*& timer) {
  if (timer == nullptr) return;
  uv_close(reinterpret_cast<uv_handle_t*>(timer),
           [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
  timer = nullptr;
}

}  // namespace

void RedisReadScope::read(redisAsyncContext* ac) {
  auto* client = static_cast<RedisClient*>(ac->data);
  if (client == nullptr) return redisAsyncHandleRead(ac);
  client->delivering_ = true;
  redisAsyncHandleRead(ac);
  client->delivering_ = false;
  if (client->after_read_) client->after_read_();
}

RedisClient::RedisClient(uv_loop_t* loop, RedisClientOptions options)
    : loop_(loop),
      options_(std::move(options)),
      endpoint_(options_.endpoint),
      backoff_(options_.min_backoff),
      errors_(options_.name + ": Redis answered", kRedisErrorCauseNames,
              options_.error_log_interval) {
  if (options_.command_timeout.count() <= 0 || options_.min_backoff.count() <= 0 ||
      options_.max_backoff < options_.min_backoff) {
    throw std::invalid_argument("RedisClient: timeout and backoffs must be > 0, max >= min");
  }
  if (options_.replicas > kMaxRedisReplicas || options_.replica_timeout.count() <= 0 ||
      options_.replica_timeout >= options_.command_timeout) {
    throw std::invalid_argument(
        "RedisClient: replicas must be at most " + std::to_string(kMaxRedisReplicas) +
        " and the replica timeout > 0 and shorter than the command timeout");
  }
}

RedisClient::~RedisClient() {
  stop();
}

std::uint64_t RedisClient::now_ms() const {
  return uv_now(loop_);
}

void RedisClient::start() {
  if (state_ != State::kIdle) return;
  retry_timer_ = new uv_timer_t;
  uv_timer_init(loop_, retry_timer_);
  retry_timer_->data = this;
  timeout_timer_ = new uv_timer_t;
  uv_timer_init(loop_, timeout_timer_);
  timeout_timer_->data = this;
  connect();
}

void RedisClient::stop() {
  if (state_ == State::kStopped) return;
  const bool was_idle = state_ == State::kIdle;
  state_ = State::kStopped;
  last_error_ = "ERR redis client stopped";
  if (ac_ != nullptr) {
    redisAsyncContext* ac = ac_;
    ac_ = nullptr;
    ac->data = nullptr;
    redisAsyncFree(ac);  // every callback in flight runs now with no reply
  }
  close_timer(retry_timer_);
  close_timer(timeout_timer_);
  if (turn_idle_ != nullptr) {
    uv_close(reinterpret_cast<uv_handle_t*>(turn_idle_),
             [](uv_handle_t* h) { delete reinterpret_cast<uv_idle_t*>(h); });
    turn_idle_ = nullptr;
  }
  (void)was_idle;
}

bool RedisClient::want_turn_end() {
  if (state_ == State::kStopped || state_ == State::kIdle) return false;
  if (turn_wanted_) return true;
  if (turn_idle_ == nullptr) {
    turn_idle_ = new uv_idle_t;
    uv_idle_init(loop_, turn_idle_);
    turn_idle_->data = this;
    uv_unref(reinterpret_cast<uv_handle_t*>(turn_idle_));
  }
  turn_wanted_ = true;
  uv_idle_start(turn_idle_,
                [](uv_idle_t* h) { static_cast<RedisClient*>(h->data)->on_turn_end(); });
  return true;
}

void RedisClient::on_turn_end() {
  turn_wanted_ = false;
  uv_idle_stop(turn_idle_);
  for (const auto& hook : turn_end_) hook();
  if (ac_ != nullptr) flush_output(ac_);
}

void RedisClient::set_locator(Locator locator, bool primary) {
  locator_ = std::move(locator);
  locate_primary_ = primary;
}

void RedisClient::connect() {
  if (!locator_) return connect_to();
  if (told_) {
    endpoint_.host = std::move(told_->host);
    endpoint_.port = told_->port;
    told_.reset();
    return connect_to();
  }
  state_ = State::kLocating;
  const std::uint64_t generation = ++generation_;
  locator_([this, alive = std::weak_ptr<char>(life_), generation](
               std::optional<RedisAddress> address, std::string why) {
    if (alive.expired() || generation != generation_ || state_ != State::kLocating) return;
    if (!address) return drop("cannot find the primary: " + why);
    endpoint_.host = std::move(address->host);
    endpoint_.port = address->port;
    connect_to();
  });
}

void RedisClient::relocate(const std::string& why, std::optional<RedisAddress> to) {
  if (!locator_ || state_ == State::kIdle || state_ == State::kStopped) return;
  if (to && to->host == endpoint_.host && to->port == endpoint_.port &&
      (state_ == State::kUp || state_ == State::kConnecting)) {
    return;  // already there
  }
  told_ = std::move(to);
  ++metrics_.relocations;
  logger()->info("{}: {}; asking where the primary is (was {})", options_.name, why,
                 format_redis_url(endpoint_));
  close_connection(why);
  uv_timer_stop(retry_timer_);
  backoff_ = options_.min_backoff;
  connect();
}

void RedisClient::connect_to() {
  state_ = State::kConnecting;
  ++generation_;
  redisAsyncContext* ac = redisAsyncConnect(endpoint_.host.c_str(), endpoint_.port);
  if (ac == nullptr || ac->err != 0) {
    const std::string why = ac != nullptr ? ac->errstr : "out of memory";
    if (ac != nullptr) redisAsyncFree(ac);
    drop("cannot connect: " + why);
    return;
  }
  ac->data = this;
  if (!attach_uv(ac, loop_)) {
    redisAsyncFree(ac);
    drop("cannot attach to the loop");
    return;
  }
  redisAsyncSetConnectCallback(ac, &RedisClient::on_connected);
  redisAsyncSetDisconnectCallback(ac, &RedisClient::on_disconnected);
  ac_ = ac;
  uv_timer_start(
      timeout_timer_, [](uv_timer_t* t) { static_cast<RedisClient*>(t->data)->check_timeouts(); },
      static_cast<std::uint64_t>(options_.command_timeout.count()), 0);
  // Queued before anything else: hiredis writes them first once the socket connects. A refused
  // login drops the connection, so callers get the reason at once and the client retries with
  // backoff (an operator may fix the ACL without restarting us).
  if (!endpoint_.password.empty()) {
    std::vector<std::string> auth{"AUTH"};
    if (!endpoint_.username.empty()) auth.push_back(endpoint_.username);
    auth.push_back(endpoint_.password);
    command(auth, [this, generation = generation_](const RedisValue& v) {
      if (generation != generation_ || state_ != State::kUp) return;  // that connection is gone
      if (v.is_error()) return drop("AUTH refused: " + v.str, true);  // on_reply logged it
      backoff_ = options_.min_backoff;  // logged in: only now is the connection usable
    });
  }
  if (endpoint_.db != 0) {
    command({"SELECT", std::to_string(endpoint_.db)}, [this](const RedisValue& v) {
      if (v.is_error())
        logger()->error("{}: SELECT {} failed: {}", options_.name, endpoint_.db, v.str);
    });
  }
  if (locate_primary_) check_role();
  load_scripts();
  resubscribe();
  if (on_connect_) on_connect_();
}

// A located address may be stale (Sentinel has not noticed a failover yet, or a demoted primary
// came back): a server that is not the primary is left before anything else ran on it.
void RedisClient::check_role() {
  command({"ROLE"}, [this, generation = generation_](const RedisValue& v) {
    if (generation != generation_ || state_ != State::kUp || v.is_error()) return;
    const std::string role = v.type == RedisValue::Type::kArray && !v.elements.empty()
                                 ? v.elements.front().str
                                 : std::string("no role");
    if (role == "master") return;
    ++metrics_.not_primary;
    drop("not the primary (ROLE: " + role + ")");
  });
}

void RedisClient::on_connected(const redisAsyncContext* ac, int status) {
  auto* self = static_cast<RedisClient*>(ac->data);
  if (self == nullptr || self->ac_ != ac) return;
  if (status != REDIS_OK) {
    // hiredis frees the context after this callback, failing what was queued on it.
    self->ac_ = nullptr;
    self->drop(std::string("cannot connect: ") + ac->errstr);
    return;
  }
  self->state_ = State::kUp;
  self->last_error_.clear();
  // With a password the login's answer decides (connect()): a refused one keeps backing off.
  if (self->endpoint_.password.empty()) self->backoff_ = self->options_.min_backoff;
  if (self->connects_ > 0) ++self->metrics_.reconnects;
  ++self->connects_;
  if (self->pending_.empty()) {
    uv_timer_stop(self->timeout_timer_);
  } else {
    self->arm_timeout();
  }
  logger()->info("{}: connected to {}", self->options_.name, format_redis_url(self->endpoint_));
}

void RedisClient::on_disconnected(const redisAsyncContext* ac, int) {
  auto* self = static_cast<RedisClient*>(ac->data);
  if (self == nullptr || self->ac_ != ac) return;
  self->ac_ = nullptr;  // hiredis frees it after this callback
  self->drop(std::string("connection lost: ") + (ac->err != 0 ? ac->errstr : "closed"));
}

void RedisClient::close_connection(const std::string& why) {
  last_error_ = "ERR redis unavailable: " + why;
  if (ac_ != nullptr) {
    redisAsyncContext* ac = ac_;
    ac_ = nullptr;
    ac->data = nullptr;
    redisAsyncFree(ac);  // the commands in flight fail with last_error_
  }
  timed_out_ = false;
}

void RedisClient::drop(const std::string& why, bool told) {
  if (state_ == State::kStopped) return;
  const bool was_up = state_ == State::kUp;
  close_connection(why);
  state_ = State::kBackoff;
  if (!told && (was_up || backoff_ == options_.min_backoff)) {
    logger()->warn("{}: {} ({}); retrying in {} ms", options_.name, why,
                   format_redis_url(endpoint_), backoff_.count());
  }
  uv_timer_start(
      retry_timer_,
      [](uv_timer_t* t) {
        auto* self = static_cast<RedisClient*>(t->data);
        if (self->state_ == State::kBackoff) self->connect();
      },
      static_cast<std::uint64_t>(backoff_.count()), 0);
  backoff_ = std::min(backoff_ * 2, options_.max_backoff);
}

}  // namespace wheel::jobs
