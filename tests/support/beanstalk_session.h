// SPDX-License-Identifier: Apache-2.0
// Test support: a blocking beanstalkd session for the fleet tests: one call per request, reply
// bodies parsed, reconnect-friendly (ok() says whether the connection still works). Every read has
// a timeout (a hang fails the test, never blocks it); a broken connection reads as "" and ok()
// turns false. Also field(), a value of a stats reply.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <string>

namespace wheel_test {

class BeanstalkSession {
 public:
  explicit BeanstalkSession(int port, int timeout_s = 15) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval tv{timeout_s, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ok_ = connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  ~BeanstalkSession() { close(fd_); }
  BeanstalkSession(const BeanstalkSession&) = delete;
  BeanstalkSession& operator=(const BeanstalkSession&) = delete;

  bool ok() const { return ok_; }

  // Sends `line` + "\r\n" (and a body + "\r\n" when given); returns the reply's first line
  // without "\r\n"; a RESERVED/FOUND/OK reply's body goes to `body`.
  std::string call(const std::string& line, const std::string* put_body = nullptr,
                   std::string* body = nullptr) {
    std::string out = line + "\r\n";
    if (put_body != nullptr) out += *put_body + "\r\n";
    if (!send_all(out)) return {};
    return read_reply(body);
  }
  std::string put(std::uint32_t pri, const std::string& delay, const std::string& ttr,
                  const std::string& data) {
    return call(
        "put " + std::to_string(pri) + " " + delay + " " + ttr + " " + std::to_string(data.size()),
        &data);
  }
  bool send_all(const std::string& bytes) {
    std::size_t done = 0;
    while (ok_ && done < bytes.size()) {
      const ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n <= 0)
        ok_ = false;
      else
        done += static_cast<std::size_t>(n);
    }
    return ok_;
  }
  std::string read_reply(std::string* body = nullptr) {
    std::string line = read_line();
    if (!ok_) return {};
    std::size_t bytes = 0;
    if (line.starts_with("RESERVED ") || line.starts_with("FOUND ")) {
      bytes = std::stoull(line.substr(line.rfind(' ') + 1));
    } else if (line.starts_with("OK ")) {
      bytes = std::stoull(line.substr(3));
    } else {
      return line;
    }
    std::string data = read_exact(bytes + 2);
    if (!ok_) return {};
    if (body != nullptr) *body = data.substr(0, bytes);
    return line;
  }

 private:
  bool fill() {
    char chunk[4096];
    const ssize_t n = recv(fd_, chunk, sizeof chunk, 0);
    if (n <= 0) {
      ok_ = false;
      return false;
    }
    buf_.append(chunk, static_cast<std::size_t>(n));
    return true;
  }
  std::string read_line() {
    std::size_t at;
    while ((at = buf_.find("\r\n")) == std::string::npos) {
      if (!ok_ || !fill()) return {};
    }
    std::string line = buf_.substr(0, at);
    buf_.erase(0, at + 2);
    return line;
  }
  std::string read_exact(std::size_t n) {
    while (buf_.size() < n) {
      if (!ok_ || !fill()) return {};
    }
    std::string out = buf_.substr(0, n);
    buf_.erase(0, n);
    return out;
  }

  int fd_ = -1;
  bool ok_ = false;
  std::string buf_;
};

// The value of `key` in a stats YAML body ("key: value\n"), or "" when absent.
inline std::string field(const std::string& yaml, const std::string& key) {
  const std::size_t at = yaml.find("\n" + key + ": ");
  if (at == std::string::npos) return {};
  const std::size_t from = at + key.size() + 3;
  return yaml.substr(from, yaml.find('\n', from) - from);
}

}  // namespace wheel_test
