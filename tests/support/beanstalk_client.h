// SPDX-License-Identifier: Apache-2.0
// Test support: a blocking beanstalkd client over loopback TCP (or a unix-domain socket) with
// every read bounded by a timeout (the wheel-jobs program tests and the in-process server handler
// tests).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdint>
#include <string>

namespace wheel_test {

class Client {
 public:
  explicit Client(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  // Connected to the unix-domain socket at `path` instead.
  explicit Client(const std::string& path) {
    fd_ = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    path.copy(addr.sun_path, sizeof addr.sun_path - 1);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~Client() { close_now(); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  bool connected() const { return connected_; }
  int fd() const { return fd_; }
  void close_now() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  // Ends our input to the server (SHUT_WR), as `printf ... | nc` does.
  void shutdown_write() { shutdown(fd_, SHUT_WR); }
  void send(const std::string& bytes) {
    std::size_t sent = 0;
    while (sent < bytes.size()) {
      ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return;
      sent += static_cast<std::size_t>(n);
    }
  }
  // The next line without "\r\n"; "" after `timeout_ms` or at EOF.
  std::string line(int timeout_ms = 10'000) {
    for (;;) {
      auto end = buffer_.find("\r\n");
      if (end != std::string::npos) {
        std::string line = buffer_.substr(0, end);
        buffer_.erase(0, end + 2);
        return line;
      }
      if (!fill(timeout_ms)) return "";
    }
  }
  // `n` raw bytes (a body and its "\r\n").
  std::string bytes(std::size_t n, int timeout_ms = 10'000) {
    while (buffer_.size() < n) {
      if (!fill(timeout_ms)) return "";
    }
    std::string out = buffer_.substr(0, n);
    buffer_.erase(0, n);
    return out;
  }
  std::string ask(const std::string& request) {
    send(request);
    return line();
  }
  // The YAML body of a stats command ("stats", "stats-job 3", ...); "" when the reply is not OK.
  std::string yaml(const std::string& request) {
    send(request);
    const std::string head = line();
    if (head.rfind("OK ", 0) != 0) return "";
    return bytes(std::stoul(head.substr(3)) + 2);
  }
  // True when nothing arrives within `ms`.
  bool silent_for(int ms) { return buffer_.empty() && !fill(ms); }

 private:
  bool fill(int timeout_ms) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) <= 0) return false;
    char buf[65536];
    ssize_t n = recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) return false;
    buffer_.append(buf, static_cast<std::size_t>(n));
    return true;
  }
  int fd_ = -1;
  bool connected_ = false;
  std::string buffer_;
};

}  // namespace wheel_test
