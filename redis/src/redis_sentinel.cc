// SPDX-License-Identifier: Apache-2.0
#include "wheel/redis/redis_sentinel.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <stdexcept>

#include "wheel/logger.h"

namespace wheel::jobs {

namespace {

// "HOST PORT" of a get-master-addr-by-name reply ([host, port]), or nullopt.
std::optional<RedisAddress> address_of(const RedisValue& v) {
  if (v.type != RedisValue::Type::kArray || v.elements.size() != 2) return std::nullopt;
  const RedisValue& host = v.elements[0];
  const RedisValue& port = v.elements[1];
  if (host.type != RedisValue::Type::kString || port.type != RedisValue::Type::kString ||
      host.str.empty()) {
    return std::nullopt;
  }
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(port.str.data(), port.str.data() + port.str.size(), value);
  if (ec != std::errc() || end != port.str.data() + port.str.size() || value == 0 ||
      value > 65535) {
    return std::nullopt;
  }
  return RedisAddress{host.str, static_cast<std::uint16_t>(value)};
}

// The sentinels' connections: no database, the sentinel password, to each sentinel in turn
// (a locator that answers at once with the next address).
RedisClientOptions sentinel_client_options(const RedisSentinelOptions& o, const RedisAddress& at,
                                           std::string what) {
  RedisClientOptions c;
  c.endpoint.host = at.host;
  c.endpoint.port = at.port;
  c.endpoint.password = o.endpoint.sentinel_password;
  c.command_timeout = o.command_timeout;
  c.replica_timeout = std::min(c.replica_timeout, o.command_timeout / 2);
  if (c.replica_timeout.count() <= 0) c.replica_timeout = std::chrono::milliseconds(1);
  c.min_backoff = o.min_backoff;
  c.max_backoff = o.max_backoff;
  c.name = o.name + " " + std::move(what);
  return c;
}

}  // namespace

// One locate(): the sentinels left to ask and the reason the last one gave.
struct RedisSentinel::Ask {
  Located done;
  std::size_t tries_left = 0;
  std::string last_error;
};

RedisSentinel::RedisSentinel(uv_loop_t* loop, RedisSentinelOptions options)
    : options_(std::move(options)) {
  if (options_.endpoint.sentinels.empty() || options_.endpoint.master.empty()) {
    throw std::invalid_argument("RedisSentinel: needs at least one sentinel and the master's name");
  }
  if (options_.command_timeout.count() <= 1) {
    throw std::invalid_argument("RedisSentinel: the command timeout must be at least 2 ms");
  }
  const auto& sentinels = options_.endpoint.sentinels;
  ask_ = std::make_unique<RedisClient>(
      loop, sentinel_client_options(options_, sentinels.front(), "(questions)"));
  ask_->set_locator(
      [this](const RedisClient::Locate& answer) {
        const RedisAddress& address = options_.endpoint.sentinels[next_ask_];
        next_ask_ = (next_ask_ + 1) % options_.endpoint.sentinels.size();
        answer(address, "");
      },
      false);
  // Every sentinel's announcements: the leader of a failover announces first, the others only
  // once they learn it (their hello messages, every 2 s), and a follower should not wait.
  for (const RedisAddress& sentinel : sentinels) {
    watches_.push_back(std::make_unique<RedisClient>(
        loop, sentinel_client_options(options_, sentinel, "(events)")));
  }
}

RedisSentinel::~RedisSentinel() {
  stop();
}

void RedisSentinel::start() {
  ask_->start();
  for (auto& watch : watches_) {
    watch->subscribe("+switch-master", [this](std::string_view m) { on_switch(m); });
    watch->start();
  }
}

void RedisSentinel::stop() {
  if (stopped_) return;
  stopped_ = true;
  ask_->stop();
  for (auto& watch : watches_) watch->stop();
}

void RedisSentinel::follow(RedisClient& client) {
  followers_.push_back(&client);
  client.set_locator(
      [this](const RedisClient::Locate& answer) {
        locate([answer](std::optional<RedisAddress> primary, std::string error) {
          answer(std::move(primary), std::move(error));
        });
      },
      true);
}

void RedisSentinel::locate(Located done) {
  auto a = std::make_shared<Ask>();
  a->done = std::move(done);
  a->tries_left = options_.endpoint.sentinels.size();
  ask(std::move(a));
}

void RedisSentinel::ask(std::shared_ptr<Ask> a) {
  const std::uint64_t attempt = ask_->attempts();
  const std::string sentinel = format_redis_address({ask_->endpoint().host, ask_->endpoint().port});
  // The client calls back on a later turn (a reply, or a failure raised on the next turn), and
  // fails every command at its stop(): `this` is alive for each callback.
  ask_->command({"SENTINEL", "get-master-addr-by-name", options_.endpoint.master},
                [this, a, attempt, sentinel](const RedisValue& v) {
                  if (auto primary = address_of(v)) {
                    ++metrics_.asks;
                    return a->done(std::move(primary), "");
                  }
                  ++metrics_.ask_failures;
                  const std::string why =
                      v.is_error() ? v.str
                                   : "knows no primary named '" + options_.endpoint.master +
                                         "' (check `sentinel monitor` and the #MASTER of the URL)";
                  a->last_error = "sentinel " + sentinel + ": " + why;
                  if (--a->tries_left == 0 || stopped_) return a->done(std::nullopt, a->last_error);
                  // Pass this sentinel over, unless another question already did.
                  if (ask_->attempts() == attempt)
                    ask_->relocate("asking the next sentinel: " + why);
                  ask(a);
                });
}

std::array<std::uint64_t, kRedisErrorCauses> RedisSentinel::errors() const {
  std::array<std::uint64_t, kRedisErrorCauses> sum{};
  for (std::size_t i = 0; i < kRedisErrorCauses; ++i) {
    sum[i] = ask_->metrics().errors[i];
    for (const auto& watch : watches_) sum[i] += watch->metrics().errors[i];
  }
  return sum;
}

// "+switch-master" carries "MASTER OLD-IP OLD-PORT NEW-IP NEW-PORT". Each sentinel announces
// the same switch: only the first word of it counts.
void RedisSentinel::on_switch(std::string_view message) {
  std::vector<std::string_view> words;
  for (std::size_t at = 0; at <= message.size() && words.size() < 6;) {
    const std::size_t end = std::min(message.find(' ', at), message.size());
    words.push_back(message.substr(at, end - at));
    at = end + 1;
  }
  if (words.size() != 5 || words[0] != options_.endpoint.master) return;
  unsigned port = 0;
  const auto [end, ec] = std::from_chars(words[4].data(), words[4].data() + words[4].size(), port);
  if (ec != std::errc() || end != words[4].data() + words[4].size() || port == 0 || port > 65535) {
    return;
  }
  const RedisAddress primary{std::string(words[3]), static_cast<std::uint16_t>(port)};
  if (primary == announced_) return;  // another sentinel's word for the same switch
  announced_ = primary;
  ++metrics_.switches;
  logger()->info("{}: Sentinel moved the primary '{}': {}", options_.name, options_.endpoint.master,
                 message.substr(words[0].size() + 1));
  for (RedisClient* follower : followers_) {
    // Straight to the announced address (ROLE still confirms it): a sentinel asked now may
    // not have learnt the switch yet.
    follower->relocate("Sentinel switched the primary to " + format_redis_address(primary),
                       primary);
  }
}

}  // namespace wheel::jobs
