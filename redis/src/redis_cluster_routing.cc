// SPDX-License-Identifier: Apache-2.0
// RedisCluster's routing: a command to the primary of its first key's slot; MOVED (the map
// patched and asked again, the command resent there), ASK (ASKING, then the command, there),
// and retries with backoff within retry_window for what a moment may cure (TRYAGAIN,
// CLUSTERDOWN, no map or node yet, a node backing off).
#include <charconv>
#include <stdexcept>
#include <utility>

#include "redis_cluster_internal.h"
#include "wheel/redis/redis_cluster_slot.h"

namespace wheel::jobs {

std::optional<RedisRedirect> parse_redis_redirect(std::string_view error) {
  RedisRedirect redirect;
  if (error.starts_with("MOVED ")) {
    redirect.moved = true;
    error.remove_prefix(6);
  } else if (error.starts_with("ASK ")) {
    error.remove_prefix(4);
  } else {
    return std::nullopt;
  }
  const std::size_t space = error.find(' ');
  const std::size_t colon = error.rfind(':');
  if (space == std::string_view::npos || colon == std::string_view::npos || colon < space) {
    return std::nullopt;
  }
  unsigned slot = 0;
  unsigned port = 0;
  const std::string_view slot_text = error.substr(0, space);
  const std::string_view port_text = error.substr(colon + 1);
  if (std::from_chars(slot_text.data(), slot_text.data() + slot_text.size(), slot).ec !=
          std::errc{} ||
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), port).ec !=
          std::errc{} ||
      slot >= kRedisClusterSlots || port == 0 || port > 65535 || colon == space + 1) {
    return std::nullopt;
  }
  redirect.slot = static_cast<std::uint16_t>(slot);
  redirect.to = RedisAddress{std::string(error.substr(space + 1, colon - space - 1)),
                             static_cast<std::uint16_t>(port)};
  return redirect;
}

void RedisCluster::command(std::vector<std::string> args, RedisCallback done) {
  if (args.size() < 2) throw std::invalid_argument("RedisCluster::command: no key to route by");
  auto request = std::make_shared<Request>();
  request->slot = redis_key_slot(args[1]);
  request->args = std::move(args);
  request->done = std::move(done);
  request->started_ms = now_ms();
  dispatch(std::move(request));
}

void RedisCluster::eval(RedisScript& script, std::vector<std::string> keys,
                        std::vector<std::string> args, RedisCallback done) {
  if (keys.empty()) throw std::invalid_argument("RedisCluster::eval: no key to route by");
  auto request = std::make_shared<Request>();
  request->slot = redis_key_slot(keys.front());
  request->script = &script;
  request->keys = std::move(keys);
  request->args = std::move(args);
  request->done = std::move(done);
  request->started_ms = now_ms();
  dispatch(std::move(request));
}

void RedisCluster::dispatch(std::shared_ptr<Request> request) {
  if (stopped_) return give_up(request, RedisValue::error("ERR redis cluster stopped"));
  const RedisAddress* target = request->ask ? &*request->ask : map_.primary_of(request->slot);
  if (target == nullptr) {
    refresh();
    return retry_later(std::move(request), "CLUSTERDOWN no known node serves slot " +
                                               std::to_string(request->slot) + " (yet)");
  }
  const RedisAddress address = *target;  // client_at() may grow the map's vectors: copy first
  RedisClient* client = client_at(address);
  if (!client->accepting()) {  // backing off: down, or a failover under way
    refresh();
    return retry_later(std::move(request), "ERR redis unavailable: the node at " +
                                               format_redis_address(address) +
                                               " cannot be reached");
  }
  if (request->ask) {
    client->command({"ASKING"}, nullptr);  // pipelined: applies to the command right behind it
    request->ask.reset();
  }
  auto on_reply = [this, alive = std::weak_ptr<char>(life_), request](const RedisValue& reply) {
    if (alive.expired()) return;
    this->on_reply(request, reply);
  };
  if (request->script != nullptr) {
    client->eval(*request->script, request->keys, request->args, std::move(on_reply));
  } else {
    client->command(request->args, std::move(on_reply));
  }
}

void RedisCluster::on_reply(std::shared_ptr<Request> request, const RedisValue& reply) {
  if (!reply.is_error() || stopped_) return request->done(reply);
  const std::string_view error = reply.str;
  if (const auto redirect = parse_redis_redirect(error)) {
    if (++request->redirects > options_.max_redirects) return give_up(request, reply);
    if (redirect->moved) {
      ++metrics_.moved;
      map_.assign(redirect->slot, redirect->to);  // for the commands right behind this one
      refresh();
    } else {
      ++metrics_.asked;
      request->ask = redirect->to;
    }
    return dispatch(std::move(request));
  }
  // A connection that never came up wrote nothing: the command is sent again, like TRYAGAIN.
  if (error.starts_with("TRYAGAIN") || error.starts_with("CLUSTERDOWN") ||
      error.starts_with("ERR redis unavailable: cannot connect") ||
      error.starts_with("ERR redis unavailable: connect timeout")) {
    refresh();
    return retry_later(std::move(request), reply.str);
  }
  // Lost or timed out in flight: its effect is unknown, so it is not resent; the node may be
  // gone, so the map is asked again for the commands after it.
  if (error.starts_with("ERR redis unavailable") || error.starts_with("ERR redis timeout")) {
    refresh();
  }
  request->done(reply);
}

void RedisCluster::retry_later(std::shared_ptr<Request> request, std::string why) {
  const std::uint64_t delay = static_cast<std::uint64_t>(
      std::min(
          options_.retry_min * (std::int64_t{1} << std::min<std::uint32_t>(request->retries, 20)),
          options_.retry_max)
          .count());
  const std::uint64_t age = now_ms() - request->started_ms;
  if (age + delay > static_cast<std::uint64_t>(options_.retry_window.count())) {
    return give_up(request,
                   RedisValue::error(why + " (gave up after " + std::to_string(age) + " ms, " +
                                     std::to_string(request->retries) + " retries)"));
  }
  ++request->retries;
  ++metrics_.retries;
  Request* raw = request.get();
  raw->cluster = this;
  raw->timer = new uv_timer_t;
  uv_timer_init(loop_, raw->timer);
  raw->timer->data = raw;
  waiting_.emplace(raw, std::move(request));
  uv_timer_start(
      raw->timer,
      [](uv_timer_t* timer) {
        auto* waiting = static_cast<Request*>(timer->data);
        waiting->cluster->resume(waiting);
      },
      delay, 0);
}

// Takes `request` off its timer (closed: the loop frees it); its owner, or null if not waiting.
std::shared_ptr<RedisCluster::Request> RedisCluster::unwait(Request* request) {
  auto node = waiting_.extract(request);
  if (node.empty()) return nullptr;
  uv_close(reinterpret_cast<uv_handle_t*>(request->timer),
           [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
  request->timer = nullptr;
  return std::move(node.mapped());
}

void RedisCluster::resume(Request* request) {
  if (auto owned = unwait(request)) dispatch(std::move(owned));
}

void RedisCluster::cancel_retry(Request* request) {
  if (auto owned = unwait(request)) give_up(owned, RedisValue::error("ERR redis cluster stopped"));
}

void RedisCluster::give_up(const std::shared_ptr<Request>& request, const RedisValue& reply) {
  if (!stopped_) ++metrics_.gave_up;
  if (request->done) request->done(reply);
}

}  // namespace wheel::jobs
