// SPDX-License-Identifier: Apache-2.0
// RedisCluster: a Redis Cluster client on a libuv loop, made of one RedisClient per primary
// (each with its reconnects, timeouts, pipelining, AUTH, script loading and WAIT).
//  - The slot map comes from `CLUSTER SHARDS` (Redis 7.0), asked of a known primary, else of the
//    seed nodes in turn, at start and after every MOVED or node that cannot be reached; one
//    question at a time.
//  - A command goes to the primary serving the hash slot of its first key (redis_cluster_slot.h):
//    args[1] for command(), keys[0] for eval() (all keys of a script must share a slot).
//  - `MOVED slot host:port`: the slot is pointed at that node at once, the map is asked again,
//    and the command resent there. `ASK slot host:port`: `ASKING`, then the command, on that node,
//    for this command only. At most max_redirects of either per command, then its last reply.
//  - `TRYAGAIN`, `CLUSTERDOWN`, no map yet, no node serving the slot, or its node's connection
//    backing off (a primary down, before the cluster promotes a replica): the command is sent
//    again after a backoff (retry_min doubling up to retry_max) as long as it is younger than
//    retry_window; past it the caller gets the last error. So a failover is followed within
//    about retry_max of the promotion, if it comes within retry_window of the command.
//  - A command whose connection is lost or times out with it in flight fails (its effect is
//    unknown), as with RedisClient; the map is asked again.
//  - Scripts: preload()ed scripts are loaded on every node's connection; eval() sends EVALSHA
//    (EVAL on NOSCRIPT) to the slot's primary, then WAIT there when the node options ask for
//    replicas.
// Not here (yet): pub/sub. Sharded pub/sub (SSUBSCRIBE) needs a hiredis that knows its replies:
// Debian 12's 0.14 aborts on a push it has no callback for.
//
// Ownership: the cluster owns its clients; stop() stops them and fails what waits.
// Threads: loop thread only; callbacks run on the loop thread.
#pragma once

#include <uv.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "wheel/redis/redis_client.h"
#include "wheel/redis/redis_cluster_map.h"
#include "wheel/redis/redis_endpoint.h"

namespace wheel::jobs {

struct RedisClusterOptions {
  RedisClusterEndpoint endpoint;  // the seeds and every node's login
  // Each node's client: its endpoint's host and port are the node's, its login the cluster's.
  RedisClientOptions node;
  std::uint32_t max_redirects = 5;               // MOVED/ASK per command; REQUIRES >= 1
  std::chrono::milliseconds retry_window{5000};  // REQUIRES > 0
  std::chrono::milliseconds retry_min{20};       // REQUIRES > 0
  std::chrono::milliseconds retry_max{500};      // REQUIRES >= retry_min
  std::string name = "redis cluster";            // in log lines
};

// What a cluster client counts (loop thread only).
struct RedisClusterMetrics {
  std::uint64_t refreshes = 0;  // slot maps received
  std::uint64_t moved = 0;      // MOVED replies followed
  std::uint64_t asked = 0;      // ASK replies followed
  std::uint64_t retries = 0;    // commands sent again after a backoff
  std::uint64_t gave_up = 0;    // commands failed past retry_window or max_redirects
};

class RedisCluster {
 public:
  // Throws std::invalid_argument for options out of range (no seed, bounds above). Does not
  // connect yet.
  RedisCluster(uv_loop_t* loop, RedisClusterOptions options);
  ~RedisCluster();  // REQUIRES: stop() was called and the loop ran since
  RedisCluster(const RedisCluster&) = delete;
  RedisCluster& operator=(const RedisCluster&) = delete;

  // Connects to the seeds and asks for the slot map.
  void start();
  // Stops every node's client (their commands in flight fail), fails every command waiting for
  // a retry ("ERR redis cluster stopped"). Idempotent.
  void stop();

  // Loads `script` on every node's connection (call before start()). Must outlive the cluster.
  void preload(RedisScript* script) { scripts_.push_back(script); }

  // Sends `args` to the primary serving args[1]'s slot (commands whose first argument is a key:
  // GET, SET, HSET, ZADD, DEL...), following redirections and retrying as above; `done` gets the
  // reply or the error. REQUIRES args.size() >= 2.
  void command(std::vector<std::string> args, RedisCallback done);
  // EVALSHA/EVAL of `script` with `keys` (REQUIRES not empty, one slot) and `args`, on the
  // primary serving keys[0]'s slot, then WAIT there with replicas.
  void eval(RedisScript& script, std::vector<std::string> keys, std::vector<std::string> args,
            RedisCallback done);

  // The current slot map (empty before the first answer).
  const RedisClusterMap& map() const { return map_; }
  // The client of the node at `address`, created (and started) when new; null once stopped.
  // Tests and callers that must reach every primary (a scan) use it.
  RedisClient* client_at(const RedisAddress& address);
  const RedisClusterMetrics& metrics() const { return metrics_; }
  // Commands without their answer yet: in flight on a node's connection or waiting for a retry.
  std::size_t in_flight() const;

 private:
  struct Request;
  void dispatch(std::shared_ptr<Request> request);
  void on_reply(std::shared_ptr<Request> request, const RedisValue& reply);
  void retry_later(std::shared_ptr<Request> request, std::string why);
  void give_up(const std::shared_ptr<Request>& request, const RedisValue& reply);
  std::shared_ptr<Request> unwait(Request* request);  // off its retry timer
  void resume(Request* request);                      // its retry timer fired
  void cancel_retry(Request* request);                // stop(): fails it
  void refresh();
  void ask_for_map(std::vector<RedisAddress> candidates, std::size_t next);
  void adopt(RedisClusterMap map);
  void answered();  // a question for the map is over: the next may begin
  std::uint64_t now_ms() const { return uv_now(loop_); }

  uv_loop_t* loop_;
  RedisClusterOptions options_;
  RedisClusterMap map_;
  bool started_ = false;
  bool stopped_ = false;
  bool refreshing_ = false;
  bool again_ = false;                   // a refresh was asked for during the question
  uv_timer_t* refresh_timer_ = nullptr;  // the gap between two questions; freed when closed
  std::map<std::string, std::unique_ptr<RedisClient>> clients_;  // by "host:port"
  std::vector<std::unique_ptr<RedisClient>> retired_;            // stopped; freed at a refresh
  std::vector<RedisScript*> scripts_;
  std::map<Request*, std::shared_ptr<Request>> waiting_;  // on a retry timer
  std::uint64_t last_ask_ms_ = 0;                         // the last CLUSTER SHARDS question began
  std::uint64_t map_asks_ = 0;                            // questions begun
  std::shared_ptr<char> life_ = std::make_shared<char>();
  RedisClusterMetrics metrics_;
};

}  // namespace wheel::jobs
