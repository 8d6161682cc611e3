// SPDX-License-Identifier: Apache-2.0
// Test support: a real redis-server (Debian's) as a child process, on a free loopback port, in a
// temporary directory of its own, with AOF on and fsync on every write (appendfsync always), so
// a kill -9 loses nothing acknowledged. stop() and kill() end it; restart() starts it again on
// the same port and directory (it reloads its AOF). Every wait is bounded. Also a blocking
// command helper (hiredis's sync API) for the tests' own checks.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "support/child_process.h"
#include "support/free_port.h"

namespace wheel_test {

// The replies of blocking commands sent in order on one connection, each as text: integers in
// decimal, arrays joined by '\n', errors prefixed with "ERR:" (nil: empty). Empty strings when
// Redis cannot be reached. Later commands see what earlier ones did (AUTH, SELECT).
inline std::vector<std::string> redis_session(
    int port, const std::vector<std::vector<std::string>>& commands) {
  std::vector<std::string> replies(commands.size());
  timeval tv{5, 0};
  redisContext* c = redisConnectWithTimeout("127.0.0.1", port, tv);
  if (c == nullptr || c->err != 0) {
    if (c != nullptr) redisFree(c);
    return replies;
  }
  redisSetTimeout(c, tv);
  for (std::size_t k = 0; k < commands.size(); ++k) {
    std::vector<const char*> argv;
    std::vector<std::size_t> lens;
    for (const auto& a : commands[k]) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    auto* r = static_cast<redisReply*>(
        redisCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lens.data()));
    if (r == nullptr) break;
    auto one = [](const redisReply* e) -> std::string {
      if (e->type == REDIS_REPLY_INTEGER) return std::to_string(e->integer);
      if (e->type == REDIS_REPLY_ERROR) return "ERR:" + std::string(e->str, e->len);
      if (e->str != nullptr) return std::string(e->str, e->len);
      return {};
    };
    std::string& out = replies[k];
    if (r->type == REDIS_REPLY_ARRAY) {
      for (std::size_t i = 0; i < r->elements; ++i) out += (i ? "\n" : "") + one(r->element[i]);
    } else {
      out = one(r);
    }
    freeReplyObject(r);
  }
  redisFree(c);
  return replies;
}

// One reply of a blocking command, as text (redis_session).
inline std::string redis_command(int port, const std::vector<std::string>& args) {
  return redis_session(port, {args}).front();
}

// A field of INFO (e.g. "total_commands_processed"), or -1.
inline long long redis_info_field(int port, const std::string& section, const std::string& name) {
  const std::string info = redis_command(port, {"INFO", section});
  const std::size_t at = info.find(name + ":");
  if (at == std::string::npos) return -1;
  return std::atoll(info.c_str() + at + name.size() + 1);
}

// `program` found on PATH (spawn() takes a path), or "" if it is not there.
inline std::string find_program(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    const std::size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::string candidate = dirs.substr(start, end - start) + "/" + program;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return {};
}

class RedisServer {
 public:
  // Starts redis-server (from PATH) with `extra` arguments after ours (e.g. --replicaof) on a
  // port from `pick_port` (a cluster node needs one whose bus port, +10000, is free too), or
  // fails the test if it cannot.
  explicit RedisServer(std::vector<std::string> extra = {}, int (*pick_port)() = free_port)
      : extra_(std::move(extra)) {
    char tmpl[] = "/tmp/wheel-redis-XXXXXX";
    dir_ = mkdtemp(tmpl) != nullptr ? tmpl : "";
    // A port free a moment ago may be taken by a parallel test before Redis binds it: retry.
    for (int attempt = 0; attempt < 5 && !running(); ++attempt) start_on(pick_port(), attempt == 4);
  }
  ~RedisServer() {
    stop();
    std::error_code ignored;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
  }
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  int port() const { return port_; }
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  const std::string& dir() const { return dir_; }
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

  // SIGTERM (Redis then writes nothing more: AOF is already synced) and wait.
  void stop() { signal_and_wait(SIGTERM); }
  // SIGKILL: what was not fsynced is lost (with appendfsync always: nothing acknowledged).
  void kill() { signal_and_wait(SIGKILL); }
  // SIGSTOP/SIGCONT: a Redis that hangs (accepts bytes, answers nothing).
  void pause() { ::kill(pid_, SIGSTOP); }
  void resume() { ::kill(pid_, SIGCONT); }
  // Starts again on the same port and directory; false if it did not come up.
  bool restart() {
    stop();
    start_on(port_, true);
    return running();
  }

 private:
  // Starts redis-server on `port`; on failure reports it (when `last`) and leaves pid_ -1.
  void start_on(int port, bool last) {
    port_ = port;
    std::vector<std::string> args{find_program("redis-server"),
                                  "--port",
                                  std::to_string(port_),
                                  "--bind",
                                  "127.0.0.1",
                                  "--dir",
                                  dir_,
                                  "--appendonly",
                                  "yes",
                                  "--appendfsync",
                                  "always",
                                  "--save",
                                  "",
                                  "--daemonize",
                                  "no",
                                  "--loglevel",
                                  "warning",
                                  "--logfile",
                                  dir_ + "/redis.log"};
    args.insert(args.end(), extra_.begin(), extra_.end());
    pid_ = spawn(args, -1);
    if (pid_ <= 0) {
      if (last) ADD_FAILURE() << "cannot start redis-server";
      return;
    }
    const auto deadline = Clock::now() + std::chrono::seconds(20);
    while (Clock::now() < deadline) {
      if (redis_command(port_, {"PING"}) == "PONG") return;
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) break;  // died (port taken?)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (last) ADD_FAILURE() << "redis-server did not answer PING on port " << port_;
    ::kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  void signal_and_wait(int sig) {
    if (pid_ <= 0) return;
    ::kill(pid_, sig);
    wait_with_deadline(pid_, Clock::now() + kExitGrace);
    pid_ = -1;
  }

  std::vector<std::string> extra_;
  std::string dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace wheel_test
