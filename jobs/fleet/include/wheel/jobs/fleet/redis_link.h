// SPDX-License-Identifier: Apache-2.0
// RedisLink: how the store reaches Redis: one RedisClient (redis://, redis-sentinel://: one
// primary holds every key) or a RedisCluster (redis-cluster://: each script goes to the primary
// serving the slot of its first key). On a cluster the store names a key of the shard in KEYS[1]
// of every script; the same scripts run on both.
//
// Threads: loop thread only (the client's or the cluster's). The client or cluster must outlive
// the link and every copy of it.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "wheel/redis/redis_client.h"
#include "wheel/redis/redis_cluster.h"

namespace wheel::jobs {

class RedisLink {
 public:
  RedisLink(RedisClient& client) : client_(&client) {}      // NOLINT: a client is a link
  RedisLink(RedisCluster& cluster) : cluster_(&cluster) {}  // NOLINT: so is a cluster

  // Loads `script` on every connection (call before start()).
  void preload(RedisScript* script) {
    if (client_ != nullptr) return client_->preload(script);
    cluster_->preload(script);
  }
  // EVALSHA of `script`: on a cluster `keys` (REQUIRES not empty, one slot) as KEYS, which
  // route it; on one Redis no KEYS, as before clusters (the scripts read their prefix from
  // ARGV[1] either way; and Redis cuts an unauthenticated client's command past 10 arguments
  // with a protocol error, which would hide its NOAUTH).
  void eval(RedisScript& script, std::vector<std::string> keys, std::vector<std::string> args,
            RedisCallback done) {
    if (client_ != nullptr) return client_->eval(script, args, std::move(done));
    cluster_->eval(script, std::move(keys), std::move(args), std::move(done));
  }
  // A command whose first argument (args[1]) is a key of the shard.
  void command(std::vector<std::string> args, RedisCallback done) {
    if (client_ != nullptr) return client_->command(args, std::move(done));
    cluster_->command(std::move(args), std::move(done));
  }
  // RedisClient::want_turn_end; a cluster has no turn end: its callers send at once (what
  // comes while a batch is in flight still goes as one script when it returns).
  bool want_turn_end() { return client_ != nullptr && client_->want_turn_end(); }
  void add_turn_end(std::function<void()> hook) {
    if (client_ != nullptr) client_->add_turn_end(std::move(hook));
  }
  // RedisClient::set_after_read / delivering: on a cluster nothing is gathered (written at once).
  void set_after_read(std::function<void()> hook) {
    if (client_ != nullptr) client_->set_after_read(std::move(hook));
  }
  bool delivering() const { return client_ != nullptr && client_->delivering(); }
  std::size_t in_flight() const {
    return client_ != nullptr ? client_->in_flight() : cluster_->in_flight();
  }
  RedisClient* client() const { return client_; }
  RedisCluster* cluster() const { return cluster_; }

 private:
  RedisClient* client_ = nullptr;
  RedisCluster* cluster_ = nullptr;
};

}  // namespace wheel::jobs
