// SPDX-License-Identifier: Apache-2.0
#include "acceptor.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "wheel/logger.h"
#include "wheel/net/listen_socket.h"
#include "wheel/net/socket_address.h"
#include "wheel/net/uv_error.h"

namespace wheel::net {
namespace {

int open_spare() {
  return ::open("/dev/null", O_RDONLY | O_CLOEXEC);
}

}  // namespace

Acceptor::Acceptor(uv_loop_t* loop, Sink& sink, TcpServerCounters& counts)
    : loop_(loop), sink_(sink), counts_(counts) {}

Acceptor::~Acceptor() {
  if (!open_ && fd_ >= 0) ::close(fd_);
  if (!unix_path_.empty()) remove_unix_socket(unix_path_, unix_bound_);
  if (spare_fd_ >= 0) ::close(spare_fd_);
}

std::uint16_t Acceptor::listen(const std::string& host, std::uint16_t port, bool reuse_port,
                               int backlog, std::uint32_t unix_mode) {
  int fd = -1;
  if (is_unix_host(host)) {
    unix_bound_ = bind_unix_socket(host.substr(kUnixPrefix.size()), unix_mode);
    unix_path_ = host.substr(kUnixPrefix.size());
    fd = unix_bound_.fd;
  } else {
    fd = bind_tcp_socket(host, port, reuse_port);
  }
  auto forget_file = [this] {
    if (!unix_path_.empty()) remove_unix_socket(unix_path_, unix_bound_);
    unix_path_.clear();
  };
  if (::listen(fd, backlog) != 0) {
    const int error = errno;
    ::close(fd);
    forget_file();
    throw std::system_error(error, std::generic_category(),
                            std::string("listen (") + uv_err_name(-error) + ")");
  }
  if (const int rc = uv_poll_init_socket(loop_, &poll_, fd); rc != 0) {
    ::close(fd);
    forget_file();
    check_uv(rc, "uv_poll_init_socket");
  }
  ++open_handles_;
  poll_.data = this;
  fd_ = fd;
  open_ = true;  // from here on the handles need closing
  check_uv(uv_timer_init(loop_, &backoff_), "uv_timer_init");
  ++open_handles_;
  backoff_.data = this;
  backoff_open_ = true;
  spare_fd_ = open_spare();
  check_uv(uv_poll_start(&poll_, UV_READABLE, &Acceptor::on_readable), "uv_poll_start");
  return bound_port(fd);
}

void Acceptor::close_handle(uv_handle_t* handle) {
  uv_close(handle, [](uv_handle_t* h) {
    auto* self = static_cast<Acceptor*>(h->data);
    if (h == reinterpret_cast<uv_handle_t*>(&self->poll_)) {
      ::close(self->fd_);  // only now: libuv no longer watches it
      self->fd_ = -1;
    }
    --self->open_handles_;
  });
}

void Acceptor::close() {
  if (!open_) return;
  open_ = false;
  // The file goes now: a client that connects meanwhile is refused rather than left waiting.
  if (!unix_path_.empty()) remove_unix_socket(unix_path_, unix_bound_);
  unix_path_.clear();
  close_handle(reinterpret_cast<uv_handle_t*>(&poll_));
  if (backoff_open_) close_handle(reinterpret_cast<uv_handle_t*>(&backoff_));
  backoff_open_ = false;
  if (spare_fd_ >= 0) ::close(spare_fd_);
  spare_fd_ = -1;
}

void Acceptor::on_readable(uv_poll_t* poll, int status, int) {
  auto* self = static_cast<Acceptor*>(poll->data);
  if (status < 0) return self->log_trouble("poll", status);
  // A bounded batch per wakeup keeps a connect storm from starving the open connections; the
  // poll is level-triggered, so the rest comes on the next turn of the loop.
  for (int i = 0; i < 256 && self->open_; ++i) {
    const int fd = ::accept4(self->fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      if (self->sink_.full()) {
        self->reject_full(fd);
      } else {
        self->sink_.on_accepted(fd);
      }
      continue;
    }
    const int error = errno;
    if (error == EAGAIN || error == EWOULDBLOCK) return;
    if (error == EINTR || error == ECONNABORTED) continue;
    if (error == EMFILE || error == ENFILE) return self->reject_for_descriptors();
    ++self->counts_.accept_errors;
    return self->log_trouble("accept", -error);
  }
}

void Acceptor::log_trouble(const char* what, int error) {
  // At most one line a second: a storm of failures must not become a storm of log lines.
  const std::uint64_t now = uv_now(loop_);
  if (logged_ && now - last_log_ms_ < 1000) return;
  logged_ = true;
  last_log_ms_ = now;
  wheel::logger()->warn(
      "TcpServer: {} failed: {} ({} refused for lack of descriptors, {} other accept "
      "errors so far)",
      what, uv_err_name(error), counts_.rejected_emfile, counts_.accept_errors);
}

void Acceptor::reject_full(int fd) {
  const std::string_view line = sink_.reject_line();
  // Best effort, never blocking: the socket is new, its send buffer empty.
  if (!line.empty()) (void)!::send(fd, line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  ::close(fd);
  ++counts_.rejected_full;
}

void Acceptor::reject_for_descriptors() {
  // Out of descriptors: give up the spare one to accept each waiting client, tell it why, and
  // close it; then take the spare back. Without this the clients would wait in the backlog
  // (and the level-triggered poll would spin) or, with libuv's own trick, get a bare EOF.
  const std::string_view line = sink_.reject_line();
  while (spare_fd_ >= 0) {
    ::close(spare_fd_);
    spare_fd_ = -1;
    const int fd = ::accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      if (!line.empty()) (void)!::send(fd, line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      ::close(fd);
      ++counts_.rejected_emfile;
    }
    spare_fd_ = open_spare();
    if (fd < 0) break;  // EAGAIN: the backlog is empty
  }
  log_trouble("accept", UV_EMFILE);
  if (spare_fd_ >= 0) return;
  // No spare (another thread took the descriptor): stop polling for a moment rather than spin.
  ++counts_.accept_errors;
  uv_poll_stop(&poll_);
  const int rc = uv_timer_start(
      &backoff_,
      [](uv_timer_t* t) {
        auto* self = static_cast<Acceptor*>(t->data);
        if (self->spare_fd_ < 0) self->spare_fd_ = open_spare();
        if (self->open_) uv_poll_start(&self->poll_, UV_READABLE, &Acceptor::on_readable);
      },
      100, 0);
  if (rc != 0) uv_poll_start(&poll_, UV_READABLE, &Acceptor::on_readable);
}

}  // namespace wheel::net
