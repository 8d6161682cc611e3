// SPDX-License-Identifier: Apache-2.0
// RedisClient's commands: sent in order on the connection, each answered once (its reply, or
// an error when the connection is down, drops or the oldest command times out), counted in the
// metrics; Redis's error replies logged by cause.
#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>

#include "redis_client_internal.h"
#include "wheel/redis/redis_client.h"
#include "wheel/redis/redis_errors.h"

namespace wheel::jobs {

void RedisClient::command(const std::vector<std::string>& args, RedisCallback done) {
  auto pending = std::make_unique<Pending>();
  pending->done = std::move(done);
  send(args, std::move(pending));
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
    self->eval_once(*script, p->keys, p->args, std::move(p->done), p->replicated);
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

}  // namespace wheel::jobs
