// SPDX-License-Identifier: Apache-2.0
// RedisCluster: its node clients, start and stop, and the slot map (asked of a primary, else of
// the seeds in turn; adopted whole). Routing, redirections and retries: redis_cluster_routing.cc.
#include "wheel/redis/redis_cluster.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "wheel/logger.h"

namespace wheel::jobs {

RedisCluster::RedisCluster(uv_loop_t* loop, RedisClusterOptions options)
    : loop_(loop), options_(std::move(options)) {
  if (options_.endpoint.seeds.empty()) {
    throw std::invalid_argument("RedisCluster: at least one seed node");
  }
  if (options_.max_redirects < 1 || options_.retry_window.count() <= 0 ||
      options_.retry_min.count() <= 0 || options_.retry_max < options_.retry_min) {
    throw std::invalid_argument(
        "RedisCluster: max_redirects >= 1, retry window and backoffs > 0, max >= min");
  }
}

RedisCluster::~RedisCluster() {
  stop();
}

void RedisCluster::start() {
  if (started_ || stopped_) return;
  started_ = true;
  refresh_timer_ = new uv_timer_t;
  uv_timer_init(loop_, refresh_timer_);
  refresh_timer_->data = this;
  for (auto& [name, client] : clients_) client->start();
  refresh();
}

void RedisCluster::stop() {
  if (stopped_) return;
  stopped_ = true;
  if (refresh_timer_ != nullptr) {
    uv_close(reinterpret_cast<uv_handle_t*>(refresh_timer_),
             [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
    refresh_timer_ = nullptr;
  }
  std::vector<Request*> waiting;
  for (auto& [request, owned] : waiting_) waiting.push_back(request);
  for (Request* request : waiting) cancel_retry(request);
  for (auto& [name, client] : clients_) {
    client->stop();  // fails its commands in flight: their callbacks see stopped_
    retired_.push_back(std::move(client));
  }
  clients_.clear();
}

std::size_t RedisCluster::in_flight() const {
  std::size_t n = waiting_.size();
  for (const auto& [name, client] : clients_) n += client->in_flight();
  return n;
}

RedisClient* RedisCluster::client_at(const RedisAddress& address) {
  if (stopped_) return nullptr;
  const std::string name = format_redis_address(address);
  if (auto it = clients_.find(name); it != clients_.end()) return it->second.get();
  RedisClientOptions node = options_.node;
  node.endpoint = options_.endpoint.node;
  node.endpoint.host = address.host;
  node.endpoint.port = address.port;
  node.endpoint.db = 0;
  node.name = options_.name + " " + name;
  auto client = std::make_unique<RedisClient>(loop_, node);
  for (RedisScript* script : scripts_) client->preload(script);
  if (started_) client->start();
  return clients_.emplace(name, std::move(client)).first->second.get();
}

// One question in flight at a time, and none within retry_min of the last: every command
// retrying after a node failed asks for a refresh, and one answer serves them all. A refresh
// asked for meanwhile is not lost: it runs once the question is answered or the gap is over.
void RedisCluster::refresh() {
  if (stopped_ || !started_) return;
  if (refreshing_) {
    again_ = true;
    return;
  }
  const std::uint64_t now = now_ms();
  const std::uint64_t gap = static_cast<std::uint64_t>(options_.retry_min.count());
  if (map_asks_ > 0 && now < last_ask_ms_ + gap) {
    if (!uv_is_active(reinterpret_cast<uv_handle_t*>(refresh_timer_))) {
      uv_timer_start(
          refresh_timer_, [](uv_timer_t* t) { static_cast<RedisCluster*>(t->data)->refresh(); },
          last_ask_ms_ + gap - now, 0);
    }
    return;
  }
  refreshing_ = true;
  again_ = false;
  last_ask_ms_ = now;
  ++map_asks_;
  std::vector<RedisAddress> candidates;
  for (const RedisAddress& primary : map_.primaries()) {
    const auto it = clients_.find(format_redis_address(primary));
    if (it != clients_.end() && it->second->accepting()) candidates.push_back(primary);
  }
  candidates.insert(candidates.end(), options_.endpoint.seeds.begin(),
                    options_.endpoint.seeds.end());
  ask_for_map(std::move(candidates), 0);
}

void RedisCluster::answered() {
  refreshing_ = false;
  if (again_) refresh();
}

void RedisCluster::ask_for_map(std::vector<RedisAddress> candidates, std::size_t next) {
  if (stopped_) return;
  if (next == candidates.size()) {
    logger()->warn("{}: no node answered CLUSTER SHARDS (asked {}); keeping the slot map",
                   options_.name, candidates.size());
    return answered();
  }
  RedisClient* client = client_at(candidates[next]);
  client->command({"CLUSTER", "SHARDS"}, [this, alive = std::weak_ptr<char>(life_),
                                          candidates = std::move(candidates),
                                          next](const RedisValue& reply) mutable {
    if (alive.expired() || stopped_) return;
    std::string error;
    auto map = RedisClusterMap::from_shards(reply, &error);
    if (!map) {
      logger()->debug("{}: {}: {}", options_.name, format_redis_address(candidates[next]), error);
      return ask_for_map(std::move(candidates), next + 1);
    }
    adopt(std::move(*map));
    answered();
  });
}

void RedisCluster::adopt(RedisClusterMap map) {
  if (map.primaries() != map_.primaries() || map.served_slots() != map_.served_slots()) {
    std::string names;
    for (const RedisAddress& primary : map.primaries()) {
      names += (names.empty() ? "" : ", ") + format_redis_address(primary);
    }
    logger()->info("{}: {} primaries serve {} of {} slots: {}", options_.name,
                   map.primaries().size(), map.served_slots(), kRedisClusterSlots, names);
  }
  map_ = std::move(map);
  ++metrics_.refreshes;
  retired_.clear();  // stopped at an earlier answer: the loop ran since
  // Connections to every primary now (scripts load as they open); a node that serves nothing
  // any more is let go once nothing is in flight on it.
  for (const RedisAddress& primary : map_.primaries()) client_at(primary);
  for (auto it = clients_.begin(); it != clients_.end();) {
    const RedisEndpoint& at = it->second->endpoint();
    const bool primary = std::find(map_.primaries().begin(), map_.primaries().end(),
                                   RedisAddress{at.host, at.port}) != map_.primaries().end();
    if (primary || it->second->in_flight() > 0) {
      ++it;
      continue;
    }
    it->second->stop();
    retired_.push_back(std::move(it->second));
    it = clients_.erase(it);
  }
}

}  // namespace wheel::jobs
