// SPDX-License-Identifier: Apache-2.0
// Test support: a Redis Cluster for real. A RedisClusterGroup is Debian's redis-server with
// --cluster-enabled yes, `primaries` × (1 + `replicas_each`) nodes on free loopback ports, joined
// by `redis-cli --cluster create ... --cluster-replicas N --cluster-yes`, quick to fail over
// (cluster-node-timeout node_timeout_ms). A node's cluster bus is its port + 10000, so its port
// is picked where both are free and below 65536. Helpers read the cluster's own view (CLUSTER
// NODES) and move a slot by hand (CLUSTER SETSLOT, MIGRATE), as an operator adding a shard does.
// Every wait is bounded.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/child_process.h"
#include "support/redis_server.h"

namespace wheel_test {

// Whether a loopback TCP port can be bound now.
inline bool port_is_free(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

// A port P in [10000, 22000) with P and its cluster bus P + 10000 both free a moment ago: below
// the kernel's ephemeral range (where free_port() picks), so other tests rarely race for them.
inline int cluster_port() {
  static std::mt19937 random(static_cast<unsigned>(::getpid()) ^
                             static_cast<unsigned>(Clock::now().time_since_epoch().count()));
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const int port = 10000 + static_cast<int>(random() % 12000);
    if (port_is_free(port) && port_is_free(port + 10000)) return port;
  }
  return 0;
}

// One line of CLUSTER NODES: a node, its role and the slot ranges it serves.
struct ClusterNodeLine {
  std::string id;
  int port = 0;
  bool primary = false;
  bool failed = false;                     // flagged fail (or pfail)
  std::vector<std::pair<int, int>> slots;  // first, last (importing/migrating marks skipped)
};

inline std::vector<ClusterNodeLine> parse_cluster_nodes(const std::string& text) {
  std::vector<ClusterNodeLine> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string word; words >> word;) w.push_back(word);
    if (w.size() < 8) continue;
    ClusterNodeLine node;
    node.id = w[0];
    const std::size_t colon = w[1].find(':');
    node.port = colon == std::string::npos ? 0 : std::atoi(w[1].c_str() + colon + 1);
    node.primary = w[2].find("master") != std::string::npos;
    node.failed = w[2].find("fail") != std::string::npos;
    for (std::size_t i = 8; i < w.size(); ++i) {
      if (w[i].front() == '[') continue;
      const std::size_t dash = w[i].find('-');
      const int first = std::atoi(w[i].c_str());
      node.slots.emplace_back(
          first, dash == std::string::npos ? first : std::atoi(w[i].c_str() + dash + 1));
    }
    out.push_back(node);
  }
  return out;
}

struct ClusterSettings {
  int primaries = 3;
  int replicas_each = 1;
  int node_timeout_ms = 1000;  // cluster-node-timeout: a primary is failed over after about this
};

class RedisClusterGroup {
 public:
  explicit RedisClusterGroup(ClusterSettings settings = {}) : settings_(settings) {
    const int total = settings_.primaries * (1 + settings_.replicas_each);
    for (int i = 0; i < total; ++i) {
      nodes_.push_back(std::make_unique<RedisServer>(
          std::vector<std::string>{"--cluster-enabled", "yes", "--cluster-node-timeout",
                                   std::to_string(settings_.node_timeout_ms), "--appendonly", "no",
                                   "--repl-diskless-sync-delay", "0"},
          &cluster_port));
      if (!nodes_.back()->running()) return;
    }
    std::string args = "--cluster create";
    for (auto& n : nodes_) args += " 127.0.0.1:" + std::to_string(n->port());
    args += " --cluster-replicas " + std::to_string(settings_.replicas_each) + " --cluster-yes";
    auto [status, out] = run_to_exit(find_program("redis-cli"), args);
    if (status != 0) ADD_FAILURE() << "redis-cli --cluster create failed: " << out;
  }

  // Whether every running node sees the cluster ok with all its nodes, every slot served, and
  // every replica synced, waiting at most `bound`.
  bool ready(std::chrono::seconds bound = std::chrono::seconds(60)) {
    const auto deadline = Clock::now() + bound;
    while (Clock::now() < deadline) {
      if (all_ok()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  // "redis-cluster://127.0.0.1:P1,..." naming the first `seeds` running nodes.
  std::string url(std::size_t seeds = 1) const {
    std::string out = "redis-cluster://";
    std::size_t named = 0;
    for (const auto& n : nodes_) {
      if (!n->running() || named == seeds) continue;
      out += (named++ ? "," : "") + std::string("127.0.0.1:") + std::to_string(n->port());
    }
    return out;
  }

  std::size_t size() const { return nodes_.size(); }
  RedisServer& node(std::size_t i) { return *nodes_[i]; }
  // The node on `port` (which must be one of ours).
  RedisServer& node_on(int port) {
    for (auto& n : nodes_) {
      if (n->port() == port) return *n;
    }
    ADD_FAILURE() << "no node on port " << port;
    return *nodes_.front();
  }

  // The cluster as a running node sees it (empty if none answers).
  std::vector<ClusterNodeLine> view() const {
    for (const auto& n : nodes_) {
      if (!n->running()) continue;
      auto lines = parse_cluster_nodes(redis_command(n->port(), {"CLUSTER", "NODES"}));
      if (!lines.empty()) return lines;
    }
    return {};
  }
  // The port of the primary serving `slot`, as a running node sees it; 0 if none.
  int primary_of(int slot) const {
    for (const auto& line : view()) {
      for (auto [first, last] : line.slots) {
        if (line.primary && first <= slot && slot <= last) return line.port;
      }
    }
    return 0;
  }
  std::vector<int> primary_ports() const {
    std::vector<int> out;
    for (const auto& line : view()) {
      if (line.primary && !line.slots.empty()) out.push_back(line.port);
    }
    return out;
  }

  // Waits until every running node sees `slot` served by a primary other than the one on
  // `old_port` and the cluster ok; the new primary's port, or 0.
  int wait_for_new_primary(int slot, int old_port, std::chrono::seconds bound) {
    const auto deadline = Clock::now() + bound;
    while (Clock::now() < deadline) {
      const int now = primary_of(slot);
      if (now != 0 && now != old_port && all_ok()) return now;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return 0;
  }

  // Starts moving `slot` from the primary on `from` to the one on `to`: `to` imports it and
  // `from` migrates it (keys not moved yet). Keys absent from `from` are then answered ASK.
  bool begin_moving(int slot, int from, int to) {
    const std::string s = std::to_string(slot);
    return redis_command(to, {"CLUSTER", "SETSLOT", s, "IMPORTING", id_of(from)}) == "OK" &&
           redis_command(from, {"CLUSTER", "SETSLOT", s, "MIGRATING", id_of(to)}) == "OK";
  }
  // Moves every key of `slot` still on `from` to `to` (MIGRATE), then gives the slot to `to` on
  // every running node: from then on `from` answers MOVED for it.
  bool finish_moving(int slot, int from, int to) {
    const std::string s = std::to_string(slot);
    while (true) {
      const std::string keys = redis_command(from, {"CLUSTER", "GETKEYSINSLOT", s, "100"});
      if (keys.empty()) break;
      std::vector<std::string> migrate{"MIGRATE", "127.0.0.1", std::to_string(to), "", "0",
                                       "5000",    "KEYS"};
      std::istringstream names(keys);
      for (std::string k; std::getline(names, k);) migrate.push_back(k);
      if (redis_command(from, migrate) != "OK") return false;
    }
    const std::string to_id = id_of(to);
    bool ok = redis_command(to, {"CLUSTER", "SETSLOT", s, "NODE", to_id}) == "OK" &&
              redis_command(from, {"CLUSTER", "SETSLOT", s, "NODE", to_id}) == "OK";
    for (auto& n : nodes_) {
      if (n->running() && n->port() != to && n->port() != from) {
        redis_command(n->port(), {"CLUSTER", "SETSLOT", s, "NODE", to_id});
      }
    }
    return ok;
  }
  std::string id_of(int port) const { return redis_command(port, {"CLUSTER", "MYID"}); }

 private:
  bool all_ok() {
    const std::size_t running = static_cast<std::size_t>(
        std::count_if(nodes_.begin(), nodes_.end(), [](const auto& n) { return n->running(); }));
    for (auto& n : nodes_) {
      if (!n->running()) continue;
      const std::string info = redis_command(n->port(), {"CLUSTER", "INFO"});
      if (info.find("cluster_state:ok") == std::string::npos ||
          info.find("cluster_slots_ok:16384") == std::string::npos) {
        return false;
      }
      const auto lines = parse_cluster_nodes(redis_command(n->port(), {"CLUSTER", "NODES"}));
      if (lines.size() < running) return false;
      const std::string repl = redis_command(n->port(), {"INFO", "replication"});
      if (repl.find("role:slave") != std::string::npos &&
          repl.find("master_link_status:up") == std::string::npos) {
        return false;
      }
    }
    return true;
  }

  ClusterSettings settings_;
  std::vector<std::unique_ptr<RedisServer>> nodes_;
};

}  // namespace wheel_test
