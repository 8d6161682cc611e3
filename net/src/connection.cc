// SPDX-License-Identifier: Apache-2.0
#include "wheel/net/connection.h"

#include <spdlog/spdlog.h>

#include "wheel/logger.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <string>
#include <utility>

#include "connection_host.h"
#include "wheel/net/socket_address.h"

namespace wheel::net {

// Output the kernel did not take at once: bytes[sent..] are still to be written.
struct Connection::OutputQueue {
  std::string bytes;
  std::size_t sent = 0;
  std::size_t size() const { return bytes.size() - sent; }
};

Connection::Connection(ConnectionHost* host, std::uint64_t id, int fd)
    : host_(host), fd_(fd), id_and_closing_(id) {}

Connection::~Connection() {
  delete output_;
  if (fd_ >= 0) ::close(fd_);
}

bool Connection::start() {
  // Replies are tiny; Nagle would hold them back. Failing to turn it off is not fatal.
  const int one = 1;
  if (::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0) {
    wheel::logger()->debug("connection {:#x}: TCP_NODELAY: {}", id(), uv_err_name(-errno));
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = this;
  if (::epoll_ctl(host_->epoll_fd(), EPOLL_CTL_ADD, fd_, &ev) == 0) return true;
  wheel::logger()->debug("connection {:#x}: epoll_ctl: {}", id(), uv_err_name(-errno));
  return false;
}

std::size_t Connection::queued_output() const {
  return (output_ == nullptr ? 0 : output_->size()) + host_->batched_bytes(*this);
}

void Connection::pause_input() {
  if (input_paused_ || fd_ < 0) return;
  input_paused_ = true;
  if (!input_ended_ && !watch_writable(wants_writable())) abort(CloseReason::kError);
}

void Connection::resume_input() {
  if (!input_paused_ || closing()) return;
  input_paused_ = false;
  if (!input_ended_ && !watch_writable(wants_writable())) return abort(CloseReason::kError);
  // Lines held at the pause (or just an incomplete line: fed again, it is held again).
  if (!partial_.empty()) host_->resume_held(*this);
}

void Connection::notify_output_below(std::size_t low_water) {
  if (closing()) return;
  const bool watching = wants_writable();
  low_water_ = low_water == kNoMark ? kNoMark - 1 : low_water;
  // EPOLLOUT reports at once when the queue is already short: the call comes on the next turn,
  // never from inside the handler's own call.
  if (!watching && !watch_writable(true)) abort(CloseReason::kError);
}

void Connection::report_output_below() {
  if (low_water_ == kNoMark || closing() || queued_output() > low_water_) return;
  low_water_ = kNoMark;
  host_->on_output_below(*this);
}

std::string Connection::peer() const {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (fd_ < 0 || ::getpeername(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "?";
  return format_address(reinterpret_cast<const sockaddr*>(&addr));
}

void Connection::on_events(std::uint32_t events) {
  if (fd_ < 0) return;  // released earlier in the same batch of events
  if ((events & EPOLLOUT) != 0) on_writable();
  if (fd_ < 0) return;
  if (input_ended_) {
    // Only EPOLLHUP or EPOLLERR are watched now: the connection is gone both ways.
    if ((events & (EPOLLHUP | EPOLLERR)) != 0) abort(CloseReason::kPeerClosed);
    return;
  }
  if (input_paused_) {  // not reading; a reset still ends it
    if ((events & (EPOLLHUP | EPOLLERR)) != 0) abort(CloseReason::kPeerClosed);
    return;
  }
  if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) != 0) on_readable();
}

void Connection::on_readable() {
  // One read per readiness report: the set is level-triggered, so a client with more to send
  // is served again on the next turn, after the others.
  ConnectionHost* host = host_;
  char* buffer = host->read_buffer();
  const ssize_t n = ::recv(fd_, buffer, ConnectionHost::kReadBufferSize, 0);
  if (n > 0) {
    if (closing()) return;  // writing its last words: what it still sends is discarded
    idle_.record_read(host->now_ms());
    host->counts().bytes_in += static_cast<std::uint64_t>(n);
    host->dispatch(*this, std::string_view(buffer, static_cast<std::size_t>(n)));
    return;
  }
  if (n == 0) return on_input_end();
  const int error = errno;
  if (error == EAGAIN || error == EWOULDBLOCK || error == EINTR) return;
  if (error == ECONNRESET) return abort(CloseReason::kPeerClosed);
  wheel::logger()->debug("connection {:#x}: read failed: {}", id(), uv_err_name(-error));
  abort(CloseReason::kError);
}

void Connection::on_input_end() {
  // EOF means "no more requests", not "gone": the client may still read (SHUT_WR). Stop
  // watching input (an EOF stays readable) and let the handler answer what it owes.
  input_ended_ = true;
  partial_.clear();  // an unterminated last line is not a request
  if (!watch_writable(wants_writable())) return abort(CloseReason::kError);
  if (closing()) return;  // already writing its last words
  host_->on_input_end(*this);
}

void Connection::send(std::string_view bytes) {
  if (closing() || bytes.empty()) return;
  if (std::string* batch = host_->batch_of(*this)) {
    // Written once the read is handled, or at the end of the timer's turn; it counts as output
    // now, for an all-idle check later in the same turn.
    idle_.record_write(host_->now_ms());
    batch->append(bytes);
    return;
  }
  write_now(bytes);
}

void Connection::write_now(std::string_view bytes) {
  ConnectionHost* host = host_;
  idle_.record_write(host->now_ms());
  host->counts().bytes_out += bytes.size();
  std::size_t written = 0;
  if (output_ == nullptr) {  // nothing queued: try the kernel first, copy nothing
    ++host->counts().writes;
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      wheel::logger()->debug("connection {:#x}: write failed: {}", id(), uv_err_name(-errno));
      return abort(CloseReason::kError);
    }
    written = n > 0 ? static_cast<std::size_t>(n) : 0;
    if (written == bytes.size()) return;
  }
  const std::size_t rest = bytes.size() - written;
  const std::size_t queued = queued_output();
  const std::size_t max_output = host->max_output();
  std::uint64_t& peak = host->counts().max_queued_output;
  peak = std::max<std::uint64_t>(peak, queued + rest);  // sizes of objects in memory: the sum fits
  if (rest > max_output || queued > max_output - rest) {
    wheel::logger()->warn("closing a slow consumer (connection {:#x}): {} bytes of output queued",
                          id(), queued + rest);
    return abort(CloseReason::kSlowConsumer);
  }
  if (output_ == nullptr) {
    output_ = new OutputQueue;
    if (!watch_writable(true)) return abort(CloseReason::kError);
  }
  output_->bytes.append(bytes.substr(written));
}

void Connection::on_writable() {
  if (output_ != nullptr) {
    ++host_->counts().writes;
    const ssize_t n = ::send(fd_, output_->bytes.data() + output_->sent, output_->size(),
                             MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
      wheel::logger()->debug("connection {:#x}: write failed: {}", id(), uv_err_name(-errno));
      return abort(CloseReason::kError);
    }
    idle_.record_output_progress(host_->now_ms());
    output_->sent += static_cast<std::size_t>(n);
    if (output_->size() == 0) {
      delete std::exchange(output_, nullptr);
      if (closing()) return finish_close();
    } else if (output_->sent >= output_->bytes.size() / 2) {
      output_->bytes.erase(0, output_->sent);  // the buffer never grows past twice what is queued
      output_->sent = 0;
    }
  }
  report_output_below();  // may send, close or pause
  if (fd_ >= 0 && !closing() && !wants_writable() && !watch_writable(false)) {
    abort(CloseReason::kError);
  }
}

bool Connection::watch_writable(bool on) {
  epoll_event ev{};
  ev.events = (input_ended_ || input_paused_ ? 0u : EPOLLIN) | (on ? EPOLLOUT : 0u);
  ev.data.ptr = this;
  if (::epoll_ctl(host_->epoll_fd(), EPOLL_CTL_MOD, fd_, &ev) == 0) return true;
  wheel::logger()->debug("connection {:#x}: epoll_ctl: {}", id(), uv_err_name(-errno));
  return false;
}

void Connection::close_with(std::string_view last_words, CloseReason reason) {
  if (closing()) return;
  if (std::string* batch = host_->batch_of(*this)) {  // the replies so far, then the words
    batch->append(last_words);
    std::string pending;
    pending.swap(*batch);
    if (!pending.empty()) write_now(pending);
  } else if (!last_words.empty()) {
    write_now(last_words);
  }
  if (closing()) return;  // the write failed and aborted
  begin_close(reason);
  if (output_ == nullptr) return finish_close();
  // Output still queued: keep writing it (bounded by the close grace), then the FIN.
  draining_ = true;
  host_->on_draining(*this);
}

void Connection::finish_close() {
  // Half-close so that everything written arrives before the FIN. Input the client sent
  // meanwhile is read and dropped first: closing a socket with unread input sends a reset,
  // which may destroy the last words in flight.
  ::shutdown(fd_, SHUT_WR);
  for (int i = 0; i < 4 && !input_ended_; ++i) {
    const ssize_t n = ::recv(fd_, host_->read_buffer(), ConnectionHost::kReadBufferSize, 0);
    if (n <= 0) break;
  }
  release_socket();
}

void Connection::abort(CloseReason reason) {
  if (!closing()) begin_close(reason);
  release_socket();
}

void Connection::begin_close(CloseReason reason) {
  assert(!closing());
  id_and_closing_ |= kClosingBit;
  partial_.clear();
  low_water_ = kNoMark;
  host_->on_closing(*this, reason);
}

void Connection::release_socket() {
  if (fd_ < 0) return;
  if (draining_) {
    draining_ = false;
    host_->on_drained(*this);
  }
  // Closing the descriptor removes it from the epoll set (the server holds no duplicate).
  ::close(fd_);
  fd_ = -1;
  delete std::exchange(output_, nullptr);
  host_->release_later(*this);
}

}  // namespace wheel::net
