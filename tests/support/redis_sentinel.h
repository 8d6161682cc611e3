// SPDX-License-Identifier: Apache-2.0
// Test support: Redis Sentinel for real. A RedisSentinelProcess is Debian's redis-sentinel as a
// child process, on a free loopback port, in a temporary directory of its own (Sentinel rewrites
// its configuration file there), watching one primary under a name. A SentinelGroup is the
// usual small deployment: a primary, replicas (redis-server --replicaof) and three sentinels
// with a quorum of two, quick to act (the primary is down after down_after_ms without an
// answer). Every wait is bounded.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "support/child_process.h"
#include "support/free_port.h"
#include "support/redis_server.h"

namespace wheel_test {

struct SentinelSettings {
  std::string master = "wheel";
  int quorum = 2;
  int down_after_ms = 1000;  // Sentinel's down-after-milliseconds
  int failover_timeout_ms = 5000;
  std::string password;  // the sentinel's own requirepass; empty: none
};

class RedisSentinelProcess {
 public:
  // Starts redis-sentinel watching 127.0.0.1:`primary_port`, or fails the test.
  RedisSentinelProcess(int primary_port, SentinelSettings settings)
      : settings_(std::move(settings)) {
    char tmpl[] = "/tmp/wheel-sentinel-XXXXXX";
    dir_ = mkdtemp(tmpl) != nullptr ? tmpl : "";
    for (int attempt = 0; attempt < 5 && pid_ <= 0; ++attempt) {
      start_on(free_port(), primary_port, attempt == 4);
    }
  }
  ~RedisSentinelProcess() {
    kill();
    std::error_code ignored;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
  }
  RedisSentinelProcess(const RedisSentinelProcess&) = delete;
  RedisSentinelProcess& operator=(const RedisSentinelProcess&) = delete;

  int port() const { return port_; }
  bool running() const { return pid_ > 0; }
  void kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    wait_with_deadline(pid_, Clock::now() + kExitGrace);
    pid_ = -1;
  }
  // The primary this sentinel names now ("" when it does not answer).
  std::string primary() const {
    std::vector<std::vector<std::string>> commands;
    if (!settings_.password.empty()) commands.push_back({"AUTH", settings_.password});
    commands.push_back({"SENTINEL", "get-master-addr-by-name", settings_.master});
    const std::string reply = redis_session(port_, commands).back();
    const std::size_t nl = reply.find('\n');
    return nl == std::string::npos ? "" : reply.substr(0, nl) + ":" + reply.substr(nl + 1);
  }

 private:
  void start_on(int port, int primary_port, bool last) {
    port_ = port;
    const std::string conf = dir_ + "/sentinel.conf";
    {
      std::ofstream out(conf);
      const std::string& m = settings_.master;
      out << "port " << port_ << "\nbind 127.0.0.1\ndaemonize no\ndir " << dir_ << "\nlogfile "
          << dir_ << "/sentinel.log\nsentinel monitor " << m << " 127.0.0.1 " << primary_port << " "
          << settings_.quorum << "\nsentinel down-after-milliseconds " << m << " "
          << settings_.down_after_ms << "\nsentinel failover-timeout " << m << " "
          << settings_.failover_timeout_ms << "\nsentinel parallel-syncs " << m << " 1\n";
      if (!settings_.password.empty()) {
        // The sentinels of a group log in to each other with it too.
        out << "requirepass " << settings_.password << "\nsentinel sentinel-pass "
            << settings_.password << "\n";
      }
    }
    pid_ = spawn({find_program("redis-sentinel"), conf}, -1);
    if (pid_ <= 0) {
      if (last) ADD_FAILURE() << "cannot start redis-sentinel";
      return;
    }
    const auto deadline = Clock::now() + std::chrono::seconds(20);
    while (Clock::now() < deadline) {
      const std::string pong = redis_command(port_, {"PING"});
      if (pong == "PONG" || pong.starts_with("ERR:NOAUTH")) return;
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) break;  // died (port taken?)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (last) ADD_FAILURE() << "redis-sentinel did not answer PING on port " << port_;
    ::kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  SentinelSettings settings_;
  std::string dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

// A primary (AOF always), `replicas` replicas of it and three sentinels (quorum 2).
class SentinelGroup {
 public:
  explicit SentinelGroup(int replicas = 1, SentinelSettings settings = {})
      : settings_(std::move(settings)) {
    if (!primary_.running()) return;
    // The primary sends its first full copy at once, not after the default 5 s pause.
    redis_command(primary_.port(), {"CONFIG", "SET", "repl-diskless-sync-delay", "0"});
    for (int i = 0; i < replicas; ++i) {
      replicas_.push_back(std::make_unique<RedisServer>(
          std::vector<std::string>{"--replicaof", "127.0.0.1", std::to_string(primary_.port()),
                                   "--appendonly", "no", "--repl-diskless-sync-delay", "0"}));
    }
    for (int i = 0; i < 3; ++i) {
      sentinels_.push_back(std::make_unique<RedisSentinelProcess>(primary_.port(), settings_));
    }
  }

  // Whether every replica synced and every sentinel sees them all and the other sentinels
  // (a failover needs both), waiting at most `bound`.
  bool ready(std::chrono::seconds bound = std::chrono::seconds(30)) {
    const auto deadline = Clock::now() + bound;
    while (Clock::now() < deadline) {
      if (all_linked() && sentinels_agree()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  // "redis-sentinel://127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3#MASTER".
  std::string url(const std::string& credentials = "") const {
    std::string out = "redis-sentinel://" + credentials;
    for (std::size_t i = 0; i < sentinels_.size(); ++i) {
      out += (i ? "," : "") + std::string("127.0.0.1:") + std::to_string(sentinels_[i]->port());
    }
    return out + "#" + settings_.master;
  }

  RedisServer& primary() { return primary_; }
  RedisServer& replica(std::size_t i) { return *replicas_[i]; }
  RedisSentinelProcess& sentinel(std::size_t i) { return *sentinels_[i]; }
  const SentinelSettings& settings() const { return settings_; }

  // Waits until a sentinel names a primary other than "127.0.0.1:`old_port`"; its port, or 0.
  int wait_for_new_primary(int old_port, std::chrono::seconds bound) {
    const std::string old = "127.0.0.1:" + std::to_string(old_port);
    const auto deadline = Clock::now() + bound;
    while (Clock::now() < deadline) {
      for (auto& s : sentinels_) {
        const std::string now = s->primary();
        if (!now.empty() && now != old) return std::atoi(now.c_str() + now.find(':') + 1);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return 0;
  }

 private:
  bool all_linked() {
    for (auto& r : replicas_) {
      if (redis_command(r->port(), {"INFO", "replication"}).find("master_link_status:up") ==
          std::string::npos) {
        return false;
      }
    }
    return true;
  }
  bool sentinels_agree() {
    for (auto& s : sentinels_) {
      std::vector<std::vector<std::string>> commands;
      if (!settings_.password.empty()) commands.push_back({"AUTH", settings_.password});
      commands.push_back({"SENTINEL", "master", settings_.master});
      const std::string info = redis_session(s->port(), commands).back();
      auto field = [&](const std::string& name) {
        const std::size_t at = info.find(name + "\n");
        return at == std::string::npos ? -1 : std::atoi(info.c_str() + at + name.size() + 1);
      };
      if (field("num-slaves") < static_cast<int>(replicas_.size()) ||
          field("num-other-sentinels") < static_cast<int>(sentinels_.size()) - 1) {
        return false;
      }
    }
    return true;
  }

  SentinelSettings settings_;
  RedisServer primary_;
  std::vector<std::unique_ptr<RedisServer>> replicas_;
  std::vector<std::unique_ptr<RedisSentinelProcess>> sentinels_;
};

}  // namespace wheel_test
