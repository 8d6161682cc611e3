// SPDX-License-Identifier: Apache-2.0
// RedisClient's pub/sub: SUBSCRIBE on the client's connection, renewed at each reconnect.
#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include <string>
#include <utility>

#include "redis_client_internal.h"
#include "wheel/redis/redis_client.h"

namespace wheel::jobs {

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

void RedisClient::resubscribe() {
  for (auto& sub : subscriptions_) {
    const char* argv[] = {"SUBSCRIBE", sub->channel.c_str()};
    const std::size_t lens[] = {9, sub->channel.size()};
    redisAsyncCommandArgv(ac_, &RedisClient::on_message, sub.get(), 2, argv, lens);
  }
}

}  // namespace wheel::jobs
