// SPDX-License-Identifier: Apache-2.0
// Test support for net/: a wheel-server child process and a blocking line client, both on
// loopback. Used by net_server_test.cc.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/spawn.h"

namespace wheel::net::testing {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

inline long long ms_since(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
}

// The server binary (WHEEL_SERVER_PATH) followed by `args`: a command line for spawn_tied.
inline std::vector<std::string> server_command(const std::vector<std::string>& args) {
  std::vector<std::string> command{WHEEL_SERVER_PATH};
  command.insert(command.end(), args.begin(), args.end());
  return command;
}

// Runs the server binary with `args` until it exits (at most `limit`, then killed); returns
// {its exit code, or -1 when a signal ended it; its stdout and stderr together}.
inline std::pair<int, std::string> run_server_to_exit(const std::vector<std::string>& args,
                                                      std::chrono::milliseconds limit = 15s) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return {-1, "pipe"};
  const pid_t pid =
      wheel_test::spawn_tied(server_command(args), {.stdout_fd = out[1], .stderr_fd = out[1]});
  ::close(out[1]);
  std::string text;
  const auto start = Clock::now();
  while (pid > 0) {
    if (Clock::now() - start > limit) {
      ::kill(pid, SIGKILL);
      text += "<killed after " + std::to_string(limit.count()) + " ms>";
      break;
    }
    pollfd p{out[0], POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char buf[1024];
    const ssize_t n = ::read(out[0], buf, sizeof(buf));
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(out[0]);
  int status = 0;
  if (pid <= 0 || ::waitpid(pid, &status, 0) != pid) return {-1, text + "<not started>"};
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, text};
}

// A wheel-server child process started with `args` (after the binary). Waits for its
// "listening on HOST:PORT" line. The destructor kills it if the test did not stop it.
class ServerProcess {
 public:
  // `open_files_limit` > 0 lowers RLIMIT_NOFILE in the child; a non-empty `stderr_file`
  // receives its log instead of the test's stderr.
  explicit ServerProcess(const std::vector<std::string>& args, rlim_t open_files_limit = 0,
                         const std::string& stderr_file = "") {
    int out[2];
    if (::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
    int err = -1;
    if (!stderr_file.empty()) {
      err = ::open(stderr_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    }
    pid_ = wheel_test::spawn_tied(
        server_command(args),
        {.stdout_fd = out[1], .stderr_fd = err, .open_files_limit = open_files_limit});
    if (err >= 0) ::close(err);
    if (pid_ < 0) throw std::runtime_error("spawn");
    ::close(out[1]);
    out_fd_ = out[0];
    const std::string line = read_stdout_line(30s);  // sanitizer builds start slowly
    const std::string prefix = "listening on ";
    if (line.rfind(prefix, 0) != 0) throw std::runtime_error("no listening line, got: " + line);
    if (line.rfind(prefix + "unix:", 0) != 0) {  // a unix-domain socket has no port
      port_ = static_cast<std::uint16_t>(std::stoi(line.substr(line.rfind(':') + 1)));
    }
    first_line_ = line;
  }
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;
  ~ServerProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (out_fd_ >= 0) ::close(out_fd_);
  }

  std::uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }
  const std::string& first_line() const { return first_line_; }

  // Sends `sig` and waits (up to `timeout`) for the exit. Returns the wait status, or nullopt
  // when the process did not exit in time.
  std::optional<int> stop(int sig = SIGTERM, std::chrono::milliseconds timeout = 10s) {
    ::kill(pid_, sig);
    return wait_exit(timeout);
  }
  std::optional<int> wait_exit(std::chrono::milliseconds timeout) {
    const auto start = Clock::now();
    while (Clock::now() - start < timeout) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return status;
      }
      ::usleep(5000);
    }
    return std::nullopt;
  }

  // Everything written to stdout after the listening line, up to EOF. Call after stop().
  std::string rest_of_stdout() {
    std::string rest = pending_;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(out_fd_, buf, sizeof(buf))) > 0) rest.append(buf, static_cast<size_t>(n));
    return rest;
  }

  // The process's user + system CPU time, in ms (from /proc/PID/stat).
  long cpu_ms() const {
    FILE* f = std::fopen(("/proc/" + std::to_string(pid_) + "/stat").c_str(), "r");
    if (f == nullptr) return -1;
    char buf[1024];
    const size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
    std::fclose(f);
    buf[n] = 0;
    const char* p = std::strrchr(buf, ')');
    unsigned long utime = 0, stime = 0;
    // Fields after the command: state ppid pgrp session tty tpgid flags minflt cminflt majflt
    // cmajflt utime stime.
    std::sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime);
    return static_cast<long>((utime + stime) * 1000 /
                             static_cast<unsigned long>(::sysconf(_SC_CLK_TCK)));
  }

 private:
  std::string read_stdout_line(std::chrono::milliseconds timeout) {
    const auto start = Clock::now();
    while (pending_.find('\n') == std::string::npos) {
      const auto left = timeout - (Clock::now() - start);
      if (left <= 0ms) return "<timeout>";
      pollfd p{out_fd_, POLLIN, 0};
      if (::poll(&p, 1,
                 static_cast<int>(
                     std::chrono::duration_cast<std::chrono::milliseconds>(left).count())) <= 0)
        continue;
      char buf[256];
      const ssize_t n = ::read(out_fd_, buf, sizeof(buf));
      if (n <= 0) return "<eof>";
      pending_.append(buf, static_cast<size_t>(n));
    }
    const size_t nl = pending_.find('\n');
    std::string line = pending_.substr(0, nl);
    pending_.erase(0, nl + 1);
    return line;
  }

  pid_t pid_ = -1;
  int out_fd_ = -1;
  std::uint16_t port_ = 0;
  std::string pending_;
  std::string first_line_;
};

// A blocking loopback client that reads lines with a timeout.
class Client {
 public:
  // Connects to 127.0.0.1:port. `receive_buffer` > 0 shrinks SO_RCVBUF before connecting.
  explicit Client(std::uint16_t port, int receive_buffer = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    if (receive_buffer > 0) {
      ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof(receive_buffer));
    }
    const int on = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      const int e = errno;
      ::close(fd_);
      throw std::runtime_error(std::string("connect: ") + std::strerror(e));
    }
  }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  Client(Client&& other) noexcept
      : fd_(std::exchange(other.fd_, -1)), buffer_(std::move(other.buffer_)) {}
  ~Client() { close(); }

  void close() {
    if (fd_ >= 0) ::close(std::exchange(fd_, -1));
  }
  // Closes with an RST instead of a FIN.
  void reset() {
    linger l{1, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
    close();
  }
  int fd() const { return fd_; }

  // Sends everything; false when the connection failed (EPIPE, ECONNRESET).
  bool send(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EINTR) continue;
        return false;
      }
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // The next line without its "\n"; "<eof>" when the server closed (or reset) the connection,
  // "<timeout>" when no full line came within `timeout`.
  std::string read_line(std::chrono::milliseconds timeout = 5s) {
    const auto start = Clock::now();
    while (buffer_.find('\n') == std::string::npos) {
      const auto left = timeout - (Clock::now() - start);
      if (left <= 0ms) return "<timeout>";
      pollfd p{fd_, POLLIN, 0};
      const int ready = ::poll(
          &p, 1,
          static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(left).count()) +
              1);
      if (ready <= 0) continue;
      char buf[4096];
      const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) return "<eof>";
      buffer_.append(buf, static_cast<size_t>(n));
    }
    const size_t nl = buffer_.find('\n');
    std::string line = buffer_.substr(0, nl);
    buffer_.erase(0, nl + 1);
    return line;
  }

  // True when nothing but EOF (or a reset) follows within `timeout`; unread lines are skipped.
  bool wait_closed(std::chrono::milliseconds timeout = 5s) {
    const auto start = Clock::now();
    for (;;) {
      const auto left = timeout - (Clock::now() - start);
      if (left <= 0ms) return false;
      const std::string line =
          read_line(std::chrono::duration_cast<std::chrono::milliseconds>(left));
      if (line == "<eof>") return true;
      if (line == "<timeout>") return false;
    }
  }

 private:
  int fd_ = -1;
  std::string buffer_;
};

// ---- helpers of the wheel-server tests --------------------------------------------------

// The common flags of a test server: port 0, no stats line, a fine tick.
inline std::vector<std::string> server_args(std::vector<std::string> extra) {
  std::vector<std::string> args = {"--port", "0", "--stats-interval", "0", "--tick", "10ms"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// Stops the server and checks a clean, prompt exit (a sanitizer report makes it non-zero).
inline void expect_clean_exit(ServerProcess& server) {
  const auto start = Clock::now();
  const std::optional<int> status = server.stop(SIGTERM);
  ASSERT_TRUE(status.has_value()) << "the server did not exit";
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << "wait status " << *status;
  EXPECT_LT(ms_since(start), 2000);
}

// `n` clients of the server on `port`, each answered PONG once: the server has accepted them
// all. A client that gets no PONG (within 10 s) fails the test and is not returned.
inline std::vector<Client> pinged_clients(std::uint16_t port, int n) {
  std::vector<Client> clients;
  for (int i = 0; i < n; ++i) {
    clients.emplace_back(port);
    clients.back().send("PING\n");
    const std::string reply = clients.back().read_line(10s);
    if (reply != "PONG") {
      ADD_FAILURE() << "client " << i << " got '" << reply << "', not PONG";
      clients.pop_back();
      break;
    }
  }
  return clients;
}

inline nlohmann::json stats_of(Client& c) {
  c.send("STATS\n");
  const std::string line = c.read_line();
  EXPECT_EQ(line.rfind("STATS {", 0), 0u) << line;
  return nlohmann::json::parse(line.substr(6));
}

// Proves that the server has read a number of bytes from the other clients of its worker, so
// that a piece sent next arrives in a read of its own even where the kernel would coalesce
// it: polls STATS bytes_in from its own connection, less its own "STATS\n" requests.
class ServerReadWatcher {
 public:
  explicit ServerReadWatcher(std::uint16_t port) : observer_(port) {}
  // True once the others' bytes read reach `bytes`; false after `timeout`.
  bool wait_for(std::uint64_t bytes, std::chrono::milliseconds timeout = 10s) {
    const auto start = Clock::now();
    for (;;) {
      const nlohmann::json stats = stats_of(observer_);
      own_ += 6;  // this request, read before the reply was built
      if (stats["bytes_in"].get<std::uint64_t>() >= own_ + bytes) return true;
      if (Clock::now() - start > timeout) return false;
      std::this_thread::sleep_for(5ms);
    }
  }

 private:
  Client observer_;
  std::uint64_t own_ = 0;
};

}  // namespace wheel::net::testing
