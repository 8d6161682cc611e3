// SPDX-License-Identifier: Apache-2.0
// Test support: one non-blocking client connection speaking beanstalkd's protocol, for tests
// that pipeline many requests over several connections from one thread (poll()). It only moves
// bytes and splits replies; what the replies mean is the caller's business.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace wheel_test {

class BeanstalkConn {
 public:
  BeanstalkConn() = default;
  BeanstalkConn(const BeanstalkConn&) = delete;
  BeanstalkConn& operator=(const BeanstalkConn&) = delete;
  ~BeanstalkConn() { close_now(); }

  // Connects (blocking) to 127.0.0.1:port, then turns the socket non-blocking.
  bool connect_to(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    if (fd_ < 0) return false;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return false;
    int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fcntl(fd_, F_SETFL, fcntl(fd_, F_GETFL) | O_NONBLOCK) == 0;
  }
  void close_now() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  int fd() const { return fd_; }
  bool open() const { return fd_ >= 0 && !eof_; }
  bool wants_write() const { return out_pos_ < out_.size(); }

  void queue(const std::string& bytes) { out_ += bytes; }
  // Writes what the socket takes now; false on an error (the peer is gone).
  bool flush() {
    while (out_pos_ < out_.size()) {
      const ssize_t n = ::send(fd_, out_.data() + out_pos_, out_.size() - out_pos_, MSG_NOSIGNAL);
      if (n > 0) {
        out_pos_ += static_cast<std::size_t>(n);
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      return false;
    }
    if (out_pos_ == out_.size()) out_.clear(), out_pos_ = 0;
    return true;
  }
  // Reads what has arrived; false at EOF or on an error (then open() is false).
  bool fill() {
    char buf[65536];
    for (;;) {
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n > 0) {
        in_.append(buf, static_cast<std::size_t>(n));
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
      if (n < 0 && errno == EINTR) continue;
      eof_ = true;
      return false;
    }
  }
  // Takes the next whole reply from what was read: its line (without "\r\n") and, for FOUND,
  // RESERVED and OK, the data it announces (without its "\r\n"). False when it is not all here.
  bool next_reply(std::string* line, std::string* data) {
    const auto end = in_.find("\r\n", in_pos_);
    if (end == std::string::npos) return false;
    std::string l = in_.substr(in_pos_, end - in_pos_);
    std::size_t next = end + 2;
    data->clear();
    if (l.starts_with("FOUND ") || l.starts_with("RESERVED ") || l.starts_with("OK ")) {
      std::size_t n = 0;
      const auto space = l.rfind(' ');
      std::from_chars(l.data() + space + 1, l.data() + l.size(), n);
      if (in_.size() < next + n + 2) return false;
      *data = in_.substr(next, n);
      next += n + 2;
    }
    *line = std::move(l);
    in_pos_ = next;
    if (in_pos_ > (1u << 20)) in_.erase(0, in_pos_), in_pos_ = 0;
    return true;
  }

 private:
  int fd_ = -1;
  bool eof_ = false;
  std::string out_;
  std::size_t out_pos_ = 0;
  std::string in_;
  std::size_t in_pos_ = 0;
};

// Sends `requests` over `c` with at most `window` in flight and hands each reply, in order, to
// `on` (its index, line and data). False when the server stops answering by `deadline`.
inline bool pipeline(
    BeanstalkConn& c, const std::vector<std::string>& requests,
    const std::function<void(std::size_t, const std::string&, const std::string&)>& on,
    std::chrono::steady_clock::time_point deadline, std::size_t window = 256) {
  std::size_t sent = 0, answered = 0;
  while (answered < requests.size()) {
    while (sent < requests.size() && sent - answered < window) c.queue(requests[sent++]);
    if (!c.flush() || std::chrono::steady_clock::now() > deadline) return false;
    pollfd p{c.fd(), static_cast<short>(POLLIN | (c.wants_write() ? POLLOUT : 0)), 0};
    poll(&p, 1, 100);
    if (!c.fill() && !c.open()) return false;
    std::string line, data;
    while (answered < sent && c.next_reply(&line, &data)) on(answered++, line, data);
  }
  return true;
}

}  // namespace wheel_test
