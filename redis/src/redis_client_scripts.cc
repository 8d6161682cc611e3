// SPDX-License-Identifier: Apache-2.0
// RedisClient's scripts: loaded at each connect (SCRIPT LOAD), run with EVALSHA and resent as
// EVAL when Redis forgot them (NOSCRIPT: on_reply), and, with replicas, each followed by WAIT
// in the same pipeline and answered once the replicas acknowledged.
#include <memory>
#include <string>
#include <utility>

#include "redis_client_internal.h"
#include "wheel/redis/redis_client.h"

namespace wheel::jobs {

void RedisClient::load_scripts() {
  for (RedisScript* script : scripts_) {
    command({"SCRIPT", "LOAD", script->text}, [script](const RedisValue& v) {
      if (v.type == RedisValue::Type::kString) script->sha = v.str;
    });
  }
}

void RedisClient::eval(RedisScript& script, const std::vector<std::string>& args,
                       RedisCallback done) {
  eval(script, {}, args, std::move(done));
}

void RedisClient::eval(RedisScript& script, const std::vector<std::string>& keys,
                       const std::vector<std::string>& args, RedisCallback done) {
  if (options_.replicas == 0 || !script.changes) {
    return eval_once(script, keys, args, std::move(done), nullptr);
  }
  auto replicated = std::make_shared<Replicated>();
  replicated->done = std::move(done);
  replicated->replicas = options_.replicas;
  replicated->timeout_ms = options_.replica_timeout.count();
  eval_once(
      script, keys, args,
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

void RedisClient::eval_once(RedisScript& script, const std::vector<std::string>& keys,
                            const std::vector<std::string>& args, RedisCallback done,
                            std::shared_ptr<Replicated> replicated) {
  std::vector<std::string> full;
  full.reserve(keys.size() + args.size() + 3);
  const bool loaded = !script.sha.empty();
  full.push_back(loaded ? "EVALSHA" : "EVAL");
  full.push_back(loaded ? script.sha : script.text);
  full.push_back(std::to_string(keys.size()));
  full.insert(full.end(), keys.begin(), keys.end());
  full.insert(full.end(), args.begin(), args.end());
  auto pending = std::make_unique<Pending>();
  pending->done = std::move(done);
  if (loaded) {
    pending->script = &script;
    pending->keys = keys;
    pending->args = args;
    pending->replicated = std::move(replicated);
  }
  send(full, std::move(pending));
}

}  // namespace wheel::jobs
