// SPDX-License-Identifier: Apache-2.0
#include "wheel/load/jobs_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include "free_port.h"

extern char** environ;

namespace wheel::load {

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

std::vector<std::string> arguments(const JobsServerSpec& s, const std::string& dir,
                                   std::uint16_t port) {
  const std::string p = std::to_string(port);
  switch (s.kind) {
    case JobsServerKind::kWheelJobs: {
      std::vector<std::string> a{
          s.program,   "--host",       "127.0.0.1",   "--port",      p,     "--max-jobs",
          "100000000", "--max-memory", "68719476736", "--log-level", "warn"};
      if (s.durable) a.insert(a.end(), {"--dir", dir, "--fsync", s.sync});
      return a;
    }
    case JobsServerKind::kBeanstalkd: {
      std::vector<std::string> a{s.program, "-l", "127.0.0.1", "-p", p};
      if (s.durable) a.insert(a.end(), {"-b", dir, "-f", s.sync});
      return a;
    }
    case JobsServerKind::kRedis: {
      std::vector<std::string> a{s.program,   "--port",           p,   "--bind",
                                 "127.0.0.1", "--save",           "",  "--daemonize",
                                 "no",        "--protected-mode", "no"};
      if (s.durable) {
        a.insert(a.end(), {"--dir", dir, "--appendonly", "yes", "--appendfsync", s.sync});
      } else {
        a.insert(a.end(), {"--appendonly", "no"});
      }
      return a;
    }
  }
  return {};
}

int connect_with_timeout(std::uint16_t port, std::chrono::milliseconds timeout) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 && errno != EINPROGRESS) {
    close(fd);
    return -1;
  }
  pollfd p{fd, POLLOUT, 0};
  int err = 0;
  socklen_t len = sizeof err;
  if (poll(&p, 1, static_cast<int>(timeout.count())) != 1 ||
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

JobsProtocol protocol_of(JobsServerKind kind) {
  return kind == JobsServerKind::kRedis ? JobsProtocol::kRedis : JobsProtocol::kBeanstalk;
}

std::int64_t query_jobs_held(JobsProtocol protocol, std::uint16_t port,
                             std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  const int fd = connect_with_timeout(port, timeout);
  if (fd < 0) return -1;
  JobsRequestWriter writer(protocol);
  std::string request;
  writer.append_count(request);
  std::int64_t held = -1;
  if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
      static_cast<ssize_t>(request.size())) {
    JobsReplyParser parser(protocol);
    std::vector<JobsReply> replies;
    char buffer[16 * 1024];
    while (replies.empty() && Clock::now() < deadline) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(std::max<std::int64_t>(1, left.count()))) != 1) break;
      const ssize_t n = recv(fd, buffer, sizeof buffer, 0);
      if (n <= 0) break;
      if (!parser.feed(
              std::string_view(buffer, static_cast<std::size_t>(n)),
              [](std::size_t) { return JobsReplyParser::Expect::kCount; }, replies)) {
        break;
      }
    }
    if (!replies.empty() && replies.front().kind == JobsReply::Kind::kCount) {
      held = static_cast<std::int64_t>(replies.front().id);
    }
  }
  close(fd);
  return held;
}

JobsServer::JobsServer(JobsServerSpec spec, std::string dir, std::chrono::seconds timeout)
    : spec_(std::move(spec)), dir_(std::move(dir)) {
  if (spec_.durable) fs::create_directories(dir_);
  // A port found free may be taken before the server binds it: try a few.
  for (int attempt = 1;; ++attempt) {
    port_ = free_loopback_port();
    try {
      spawn_and_wait(timeout);
      return;
    } catch (const std::exception&) {
      if (attempt == 3 || pid_ > 0) throw;
    }
  }
}

JobsServer::~JobsServer() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

void JobsServer::spawn_and_wait(std::chrono::seconds timeout) {
  const std::vector<std::string> args = arguments(spec_, dir_, port_);
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const std::string log = dir_ + ".log";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  const auto start = Clock::now();
  pid_t pid = -1;
  const int e = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (e != 0) {
    throw std::runtime_error(spec_.name + ": cannot run " + spec_.program + ": " +
                             std::strerror(e));
  }
  const auto deadline = start + timeout;
  while (Clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      throw std::runtime_error(spec_.name + " exited before serving; its log ends:\n" + log_tail());
    }
    const std::int64_t held =
        query_jobs_held(protocol_of(spec_.kind), port_, std::chrono::milliseconds(1000));
    if (held >= 0) {
      pid_ = pid;
      serving_after_s_ = std::chrono::duration<double>(Clock::now() - start).count();
      held_at_start_ = held;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  throw std::runtime_error(spec_.name + " did not answer within " +
                           std::to_string(timeout.count()) + " s; its log ends:\n" + log_tail());
}

std::string JobsServer::log_tail() const {
  std::ifstream in(dir_ + ".log");
  std::stringstream text;
  text << in.rdbuf();
  const std::string all = text.str();
  return all.size() > 2000 ? all.substr(all.size() - 2000) : all;
}

std::int64_t JobsServer::jobs_held(std::chrono::seconds timeout) const {
  return query_jobs_held(protocol_of(spec_.kind), port_, timeout);
}

std::uint64_t JobsServer::rss_bytes() const {
  std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("VmRSS:")) return std::stoull(line.substr(6)) * 1024;  // "kB"
  }
  return 0;
}

std::uint64_t JobsServer::dir_bytes() const {
  if (!spec_.durable) return 0;
  std::uint64_t total = 0;
  std::error_code ec;
  for (const auto& entry : fs::recursive_directory_iterator(dir_, ec)) {
    std::error_code size_error;
    if (entry.is_regular_file(size_error)) total += entry.file_size(size_error);
  }
  return total;
}

double JobsServer::restart_after_kill(std::chrono::seconds timeout) {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  spawn_and_wait(timeout);
  return serving_after_s_;
}

int JobsServer::stop(std::chrono::seconds timeout) {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  const auto deadline = Clock::now() + timeout;
  int status = 0;
  while (true) {
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) break;
    if (r < 0 || Clock::now() >= deadline) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      pid_ = -1;
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace wheel::load
