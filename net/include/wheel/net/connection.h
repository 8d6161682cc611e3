// SPDX-License-Identifier: Apache-2.0
// Connection: one accepted TCP client of a TcpServer, as its ConnectionHandler sees it.
//
// Lifetime: the server creates it on accept and destroys it after it closed; the handler's
// on_close() is the last call that names it. Hold its id(), not a pointer, across loop turns
// (TcpServer::find(id) returns nullptr once it is gone). Everything here is loop thread only.
//
// Memory: one allocation of about 110 bytes per connection. The socket is watched by the
// server's own epoll set (one libuv poll handle for all connections) rather than a uv_tcp_t
// each (248 bytes): at a million idle connections the difference is the budget. Reads land in
// the server's shared buffer and only an incomplete line is copied (LineBuffer). Output the
// kernel does not take at once is queued (allocated only then); past
// TcpServerOptions::max_output the client is a slow consumer and closed.
//
// Backpressure: a handler whose replies outgrow what the client takes stops reading it
// (pause_input), asks to hear when the output fell below a mark (notify_output_below, then
// ConnectionHandler::on_output_below) and reads again (resume_input), so that pipelined requests
// cannot make the server hold more than about one mark of replies per connection.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "wheel/net/close_reason.h"
#include "wheel/net/idle_watch.h"
#include "wheel/net/line_framer.h"

namespace wheel::net {

class ConnectionHost;

class Connection {
 public:
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // The server-wide id: unique among open connections and, for 2^30 reuses of a slot, among
  // all. Below 2^62.
  std::uint64_t id() const { return id_and_closing_ & kIdMask; }

  // The client's address, "1.2.3.4:5678" or "[::1]:5678"; "?" when the socket cannot tell.
  std::string peer() const;

  // Writes `bytes` (copied if the kernel does not take them at once) and records write
  // activity. During on_data/on_line, replies are gathered and written once after the read.
  // Past max_output queued bytes the connection closes as a slow consumer. A no-op once closing.
  void send(std::string_view bytes);

  // Sends `last_words` after everything queued, then closes: the client sees every reply,
  // the words, then EOF. The handler's on_close(reason) runs at once; send() then does
  // nothing. A client that does not take its output within TcpServerOptions::close_grace (or
  // before a shutdown's shutdown_grace ends) is reset. Idempotent: the first reason stays.
  void close_with(std::string_view last_words, CloseReason reason = CloseReason::kLocal);
  // close_with("", reason).
  void close(CloseReason reason = CloseReason::kLocal) { close_with({}, reason); }
  // Closes at once, dropping queued output. Idempotent.
  void abort(CloseReason reason = CloseReason::kLocal);

  // True once a close began; send() then does nothing.
  bool closing() const { return (id_and_closing_ & kClosingBit) != 0; }
  // True once the client ended its input (EOF: it shut down its write side, or closed).
  bool input_ended() const { return input_ended_; }

  // The handler's per-connection pointer; nullptr at first. The server never reads it: free
  // what it points to in on_close().
  void* context() const { return context_; }
  void set_context(void* context) { context_ = context; }

  // Output bytes not yet taken by the kernel: those queued, plus the replies gathered so far
  // to go out in one write (during this connection's on_data/on_line, or a timer turn).
  std::size_t queued_output() const;

  // Stops reading the client: its socket is no longer watched for input, so what it sends waits
  // in the kernel, then TCP holds the client back. With Framing::kLines the lines left in the
  // current read are held (on_line stops at once) and handed over after resume_input(); with
  // kBytes the handler already has the read and holds what it did not run itself. A peer that
  // resets meanwhile is still noticed (on_close(kPeerClosed)). Idempotent.
  void pause_input();
  // Reads again. With Framing::kLines the held lines go to on_line first: at once, or, when
  // called during another connection's on_data/on_line, right after that call (during this
  // connection's on_line, the current read simply goes on). Idempotent; a no-op once closing.
  void resume_input();
  // True between pause_input() and resume_input().
  bool input_paused() const { return input_paused_; }
  // Asks for one ConnectionHandler::on_output_below(c) call, on a later turn of the loop, once
  // queued_output() is at most `low_water` (at the next turn if it already is). A later call
  // replaces the mark; the close cancels it.
  void notify_output_below(std::size_t low_water);

  // The idle state (read and write activity is recorded by the server itself).
  const IdleWatch& idle() const { return idle_; }

 private:
  friend class Reactor;
  struct OutputQueue;
  static constexpr std::uint64_t kClosingBit = std::uint64_t{1} << 63;
  static constexpr std::uint64_t kIdMask = (std::uint64_t{1} << 62) - 1;

  // Takes `fd` (connected, non-blocking); the server registers it in its epoll set.
  Connection(ConnectionHost* host, std::uint64_t id, int fd);
  ~Connection();

  // Registers the socket in the host's epoll set (for input) and turns Nagle off; false if the
  // set refused (the caller then frees the connection).
  bool start();
  // The server's epoll set reported `events` (EPOLLIN, EPOLLOUT, EPOLLHUP, EPOLLERR).
  void on_events(std::uint32_t events);
  void on_readable();
  void on_input_end();
  void on_writable();
  // The queue is empty on a closing connection: FIN after the last byte, then release.
  void finish_close();
  void write_now(std::string_view bytes);
  void begin_close(CloseReason reason);
  // Stops watching and closes the socket; the server frees the object after this loop turn.
  void release_socket();
  // Watches for EPOLLOUT too (`on`) or not (and EPOLLIN until the input ended, unless paused);
  // false if the epoll set refused.
  bool watch_writable(bool on);
  // Whether EPOLLOUT matters: output queued, or a low-water mark to report.
  bool wants_writable() const { return output_ != nullptr || low_water_ != kNoMark; }
  // Calls the handler's on_output_below if a mark is set and queued output is at or below it.
  void report_output_below();
  static constexpr std::size_t kNoMark = SIZE_MAX;

  ConnectionHost* host_;
  int fd_;  // -1 once released
  IdleWatch idle_;
  std::uint64_t id_and_closing_;
  LineBuffer partial_;
  void* context_ = nullptr;
  OutputQueue* output_ = nullptr;    // only while the kernel has not taken everything
  std::size_t low_water_ = kNoMark;  // notify_output_below's mark
  bool input_ended_ = false;
  bool input_paused_ = false;
  bool draining_ = false;  // closing, its output still being written (counted by the server)
};

}  // namespace wheel::net
