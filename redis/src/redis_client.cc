// SPDX-License-Identifier: Apache-2.0
#include "wheel/redis/redis_client.h"

#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <hiredis/sds.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>
#include <stdexcept>

#include "wheel/logger.h"

namespace wheel::jobs {

std::string_view redis_failure_name(RedisFailure kind) {
  switch (kind) {
    case RedisFailure::kReply:
      return "reply";
    case RedisFailure::kUnavailable:
      return "unavailable";
    case RedisFailure::kTimeout:
      return "timeout";
    case RedisFailure::kLost:
      return "lost";
  }
  return "unknown";
}

RedisValue RedisValue::error(std::string message) {
  RedisValue v;
  v.type = Type::kError;
  v.str = std::move(message);
  return v;
}

namespace {

RedisValue copy_reply(const redisReply* r) {
  RedisValue v;
  switch (r->type) {
    case REDIS_REPLY_INTEGER:
      v.type = RedisValue::Type::kInteger;
      v.integer = r->integer;
      break;
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR:
      v.type = r->type == REDIS_REPLY_STRING   ? RedisValue::Type::kString
               : r->type == REDIS_REPLY_STATUS ? RedisValue::Type::kStatus
                                               : RedisValue::Type::kError;
      v.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_ARRAY:
      v.type = RedisValue::Type::kArray;
      v.elements.reserve(r->elements);
      for (std::size_t i = 0; i < r->elements; ++i) v.elements.push_back(copy_reply(r->element[i]));
      break;
    default:
      break;
  }
  return v;
}

// hiredis's event hooks on a uv_poll_t (hiredis ships such an adapter, but it ignores poll errors,
// so a refused connect was never noticed: here an error is handed to hiredis as writability,
// and its connect check reads the socket error and fails the connection at once).
struct UvEvents {
  redisAsyncContext* context = nullptr;
  uv_poll_t handle{};
  int events = 0;
};

// Writes hiredis's output buffer, if any, now rather than on the poll's next writable event.
void flush_output(redisAsyncContext* ac) {
  if ((ac->c.flags & REDIS_CONNECTED) != 0 && ac->c.obuf != nullptr && sdslen(ac->c.obuf) > 0) {
    redisAsyncHandleWrite(ac);
  }
}

}  // namespace

// One read's replies delivered as a whole (RedisClient::set_after_read). The client outlives
// its context, which a callback may free.
struct RedisReadScope {
  static void read(redisAsyncContext* ac) {
    auto* client = static_cast<RedisClient*>(ac->data);
    if (client == nullptr) return redisAsyncHandleRead(ac);
    client->delivering_ = true;
    redisAsyncHandleRead(ac);
    client->delivering_ = false;
    if (client->after_read_) client->after_read_();
  }
};

namespace {

void uv_events_poll(uv_poll_t* handle, int status, int events) {
  auto* p = static_cast<UvEvents*>(handle->data);
  if (p->context == nullptr) return;
  if (status < 0) events = p->events;  // let hiredis find the error itself
  if (p->context != nullptr && (events & UV_READABLE) != 0) RedisReadScope::read(p->context);
  if (p->context != nullptr && (events & UV_WRITABLE) != 0) redisAsyncHandleWrite(p->context);
}

void uv_events_update(UvEvents* p, int events) {
  p->events = events;
  if (events != 0) {
    uv_poll_start(&p->handle, events, uv_events_poll);
  } else {
    uv_poll_stop(&p->handle);
  }
}

// hiredis's addRead/delRead/addWrite/delWrite: `kEvent` on (kOn) or off in the poll.
template <int kEvent, bool kOn>
void toggle_events(void* d) {
  auto* e = static_cast<UvEvents*>(d);
  uv_events_update(e, kOn ? (e->events | kEvent) : (e->events & ~kEvent));
}

bool attach_uv(redisAsyncContext* ac, uv_loop_t* loop) {
  auto* p = new UvEvents;
  if (uv_poll_init(loop, &p->handle, ac->c.fd) != 0) {
    delete p;
    return false;
  }
  p->context = ac;
  p->handle.data = p;
  ac->ev.data = p;
  ac->ev.addRead = &toggle_events<UV_READABLE, true>;
  ac->ev.delRead = &toggle_events<UV_READABLE, false>;
  ac->ev.addWrite = &toggle_events<UV_WRITABLE, true>;
  ac->ev.delWrite = &toggle_events<UV_WRITABLE, false>;
  ac->ev.cleanup = [](void* d) {
    auto* e = static_cast<UvEvents*>(d);
    e->context = nullptr;
    uv_close(reinterpret_cast<uv_handle_t*>(&e->handle),
             [](uv_handle_t* h) { delete static_cast<UvEvents*>(h->data); });
  };
  return true;
}

void close_timer(uv_timer_t*& timer) {
  if (timer == nullptr) return;
  uv_close(reinterpret_cast<uv_handle_t*>(timer),
           [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
  timer = nullptr;
}

}  // namespace

// An eval() waiting for its WAIT: the script's reply is held until the replicas answer. Either
// may come first when both fail without a connection; the caller is answered once both came.
struct RedisClient::Replicated {
  RedisCallback done;                    // the caller's
  std::optional<RedisValue> reply;       // the script's, once it came
  std::optional<RedisValue> wait_reply;  // the last WAIT's, once it came
  int waits_left = 0;                    // WAITs sent and not answered (two after NOSCRIPT)
  bool finished = false;
  std::uint32_t replicas = 0;  // the client's options, so no callback needs the client
  std::int64_t timeout_ms = 0;

  void answer();
};

struct RedisClient::Pending {
  RedisClient* client = nullptr;
  RedisCallback done;
  std::uint64_t sent_ms = 0;
  std::uint64_t sent_ns = 0;               // uv_hrtime(): the round trip in the metrics
  std::uint64_t generation = 0;            // the connection it was sent on
  RedisScript* script = nullptr;           // eval(): resent as EVAL on NOSCRIPT
  std::vector<std::string> args;           // eval(): ARGV, for that resend
  std::shared_ptr<Replicated> replicated;  // eval() with replicas: its WAIT follows it
};

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
  last_error_ = "ERR redis unavailable: " + why;
  if (ac_ != nullptr) {
    redisAsyncContext* ac = ac_;
    ac_ = nullptr;
    ac->data = nullptr;
    redisAsyncFree(ac);  // the commands in flight fail with last_error_
  }
  timed_out_ = false;
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

void RedisClient::load_scripts() {
  for (RedisScript* script : scripts_) {
    command({"SCRIPT", "LOAD", script->text}, [script](const RedisValue& v) {
      if (v.type == RedisValue::Type::kString) script->sha = v.str;
    });
  }
}

void RedisClient::resubscribe() {
  for (auto& sub : subscriptions_) {
    const char* argv[] = {"SUBSCRIBE", sub->channel.c_str()};
    const std::size_t lens[] = {9, sub->channel.size()};
    redisAsyncCommandArgv(ac_, &RedisClient::on_message, sub.get(), 2, argv, lens);
  }
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

void RedisClient::drop(const std::string& why, bool told) {
  if (state_ == State::kStopped) return;
  const bool was_up = state_ == State::kUp;
  last_error_ = "ERR redis unavailable: " + why;
  if (ac_ != nullptr) {
    redisAsyncContext* ac = ac_;
    ac_ = nullptr;
    ac->data = nullptr;
    redisAsyncFree(ac);  // the commands in flight fail with last_error_
  }
  timed_out_ = false;
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

void RedisClient::command(const std::vector<std::string>& args, RedisCallback done) {
  auto pending = std::make_unique<Pending>();
  pending->done = std::move(done);
  send(args, std::move(pending));
}

void RedisClient::eval(RedisScript& script, const std::vector<std::string>& args,
                       RedisCallback done) {
  if (options_.replicas == 0 || !script.changes) {
    return eval_once(script, args, std::move(done), nullptr);
  }
  auto replicated = std::make_shared<Replicated>();
  replicated->done = std::move(done);
  replicated->replicas = options_.replicas;
  replicated->timeout_ms = options_.replica_timeout.count();
  eval_once(
      script, args,
      [replicated](const RedisValue& v) {
        replicated->reply = v;
        replicated->answer();
      },
      replicated);
  wait_replicas(std::move(replicated));
}

// Sent right behind its script, so Redis answers it once the replicas have what the script
// wrote (or after the timeout). A script resent after NOSCRIPT sends its own WAIT, whose answer
// is the one that counts.
void RedisClient::wait_replicas(std::shared_ptr<Replicated> replicated) {
  ++replicated->waits_left;
  command(
      {"WAIT", std::to_string(options_.replicas), std::to_string(options_.replica_timeout.count())},
      [replicated](const RedisValue& w) {
        if (--replicated->waits_left > 0) return;
        replicated->wait_reply = w;
        replicated->answer();
      });
}

void RedisClient::Replicated::answer() {
  if (finished || !reply || !wait_reply) return;
  finished = true;
  if (reply->is_error()) return done(*reply);
  if (wait_reply->is_error()) return done(*wait_reply);
  if (wait_reply->integer < static_cast<long long>(replicas)) {
    return done(RedisValue::error("ERR not replicated: " + std::to_string(wait_reply->integer) +
                                  " of " + std::to_string(replicas) +
                                  " replicas acknowledged within " + std::to_string(timeout_ms) +
                                  " ms (applied on the primary, which may lose it in a failover)"));
  }
  done(*reply);
}

void RedisClient::eval_once(RedisScript& script, const std::vector<std::string>& args,
                            RedisCallback done, std::shared_ptr<Replicated> replicated) {
  std::vector<std::string> full;
  full.reserve(args.size() + 3);
  const bool loaded = !script.sha.empty();
  full.push_back(loaded ? "EVALSHA" : "EVAL");
  full.push_back(loaded ? script.sha : script.text);
  full.push_back("0");
  full.insert(full.end(), args.begin(), args.end());
  auto pending = std::make_unique<Pending>();
  pending->done = std::move(done);
  if (loaded) {
    pending->script = &script;
    pending->args = args;
    pending->replicated = std::move(replicated);
  }
  send(full, std::move(pending));
}

void RedisClient::send(const std::vector<std::string>& args, std::unique_ptr<Pending> pending) {
  pending->client = this;
  if (ac_ == nullptr || (state_ != State::kUp && state_ != State::kConnecting)) {
    fail_soon(std::move(pending->done),
              last_error_.empty() ? "ERR redis unavailable" : last_error_);
    return;
  }
  std::vector<const char*> argv;
  std::vector<std::size_t> lens;
  argv.reserve(args.size());
  lens.reserve(args.size());
  for (const auto& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  pending->sent_ms = now_ms();
  pending->sent_ns = uv_hrtime();
  pending->generation = generation_;
  Pending* raw = pending.release();
  pending_.push_back(raw);
  if (redisAsyncCommandArgv(ac_, &RedisClient::on_reply, raw, static_cast<int>(argv.size()),
                            argv.data(), lens.data()) != REDIS_OK) {
    pending_.pop_back();
    std::unique_ptr<Pending> back(raw);
    fail_soon(std::move(back->done), "ERR redis unavailable: the connection is closing");
    return;
  }
  if (pending_.size() == 1) arm_timeout();
}

void RedisClient::fail_soon(RedisCallback done, std::string why) {
  if (state_ != State::kStopped) count_failure(RedisFailure::kUnavailable);
  // Never from inside the caller's call: on the next loop turn.
  auto* req = new uv_timer_t;
  uv_timer_init(loop_, req);
  req->data = new std::pair<RedisCallback, std::string>(std::move(done), std::move(why));
  uv_timer_start(
      req,
      [](uv_timer_t* t) {
        auto* p = static_cast<std::pair<RedisCallback, std::string>*>(t->data);
        if (p->first) p->first(RedisValue::error(p->second));
        delete p;
        uv_close(reinterpret_cast<uv_handle_t*>(t),
                 [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
      },
      0, 0);
}

void RedisClient::arm_timeout() {
  if (timeout_timer_ == nullptr || pending_.empty()) return;
  const std::uint64_t deadline =
      pending_.front()->sent_ms + static_cast<std::uint64_t>(options_.command_timeout.count());
  const std::uint64_t now = now_ms();
  uv_timer_start(
      timeout_timer_, [](uv_timer_t* t) { static_cast<RedisClient*>(t->data)->check_timeouts(); },
      deadline > now ? deadline - now : 0, 0);
}

void RedisClient::check_timeouts() {
  if (state_ == State::kConnecting) {
    // The connect itself is bounded too (a black-holed host): the subscriber has no command
    // of its own in flight to time out.
    drop("connect timeout: no answer in " + std::to_string(options_.command_timeout.count()) +
         " ms");
    return;
  }
  if (pending_.empty()) return;
  const std::uint64_t age = now_ms() - pending_.front()->sent_ms;
  if (age >= static_cast<std::uint64_t>(options_.command_timeout.count())) {
    timed_out_ = true;  // drop() fails the commands in flight: timeouts, not losses
    drop("timeout: no reply in " + std::to_string(options_.command_timeout.count()) + " ms");
    return;
  }
  arm_timeout();
}

void RedisClient::on_reply(redisAsyncContext*, void* reply, void* privdata) {
  std::unique_ptr<Pending> p(static_cast<Pending*>(privdata));
  RedisClient* self = p->client;
  auto it = std::find(self->pending_.begin(), self->pending_.end(), p.get());
  if (it != self->pending_.end()) {
    const bool was_front = it == self->pending_.begin();
    self->pending_.erase(it);
    if (was_front && self->timeout_timer_ != nullptr) {
      if (self->pending_.empty()) {
        uv_timer_stop(self->timeout_timer_);
      } else {
        self->arm_timeout();
      }
    }
  }
  if (reply == nullptr) {
    if (self->state_ != State::kStopped) {
      self->count_failure(self->timed_out_ ? RedisFailure::kTimeout : RedisFailure::kLost);
    }
    if (p->done) {
      p->done(RedisValue::error(self->last_error_.empty() ? "ERR redis unavailable: connection lost"
                                                          : self->last_error_));
    }
    return;
  }
  const auto* r = static_cast<const redisReply*>(reply);
  self->metrics_.round_trip.observe(std::chrono::nanoseconds(uv_hrtime() - p->sent_ns));
  if (r->type == REDIS_REPLY_ERROR) self->note_error(std::string_view(r->str, r->len));
  if (p->script != nullptr && r->type == REDIS_REPLY_ERROR &&
      std::string_view(r->str, r->len).starts_with("NOSCRIPT")) {
    p->script->sha.clear();  // Redis forgot it: EVAL now, and load it again for later calls
    RedisScript* script = p->script;
    self->eval_once(*script, p->args, std::move(p->done), p->replicated);
    if (p->replicated) self->wait_replicas(p->replicated);
    self->command({"SCRIPT", "LOAD", script->text}, [script](const RedisValue& v) {
      if (v.type == RedisValue::Type::kString) script->sha = v.str;
    });
    return;
  }
  if (r->type == REDIS_REPLY_ERROR) self->count_failure(RedisFailure::kReply);
  // A primary demoted under us (a failover we were not told of): ask where the primary is now,
  // once per connection, after this caller has its answer.
  const bool demoted =
      self->locate_primary_ && p->generation == self->generation_ && r->type == REDIS_REPLY_ERROR &&
      classify_redis_error(std::string_view(r->str, r->len)) == RedisErrorCause::kReadonly;
  if (p->done) p->done(copy_reply(r));
  if (demoted && p->generation == self->generation_) {
    self->relocate("the server answered READONLY: it is no longer the primary");
  }
}

void RedisClient::note_error(std::string_view message) {
  const RedisErrorCause cause = classify_redis_error(message);
  ++metrics_.errors[static_cast<std::size_t>(cause)];
  std::string line(message);
  line.append(" (").append(redis_error_hint(cause)).append(")");
  errors_.note(static_cast<std::size_t>(cause), line, static_cast<std::int64_t>(now_ms()));
}

void RedisClient::subscribe(std::string channel, std::function<void(std::string_view)> on_message) {
  subscriptions_.push_back(
      std::make_unique<Subscription>(Subscription{std::move(channel), std::move(on_message)}));
  if (ac_ != nullptr) {
    Subscription* sub = subscriptions_.back().get();
    const char* argv[] = {"SUBSCRIBE", sub->channel.c_str()};
    const std::size_t lens[] = {9, sub->channel.size()};
    redisAsyncCommandArgv(ac_, &RedisClient::on_message, sub, 2, argv, lens);
  }
}

void RedisClient::on_message(redisAsyncContext* ac, void* reply, void* privdata) {
  if (reply == nullptr) return;
  const auto* r = static_cast<const redisReply*>(reply);
  if (r->type == REDIS_REPLY_ERROR && ac->data != nullptr) {  // a refused SUBSCRIBE (NOAUTH)
    static_cast<RedisClient*>(ac->data)->note_error(std::string_view(r->str, r->len));
    return;
  }
  // ["message", channel, payload]; "subscribe" confirmations are ignored.
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 3) return;
  const redisReply* kind = r->element[0];
  if (kind->type != REDIS_REPLY_STRING || std::string_view(kind->str, kind->len) != "message") {
    return;
  }
  const redisReply* payload = r->element[2];
  if (payload->type != REDIS_REPLY_STRING) return;
  auto* sub = static_cast<Subscription*>(privdata);
  if (sub->on_message) sub->on_message(std::string_view(payload->str, payload->len));
}

}  // namespace wheel::jobs
