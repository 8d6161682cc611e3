// SPDX-License-Identifier: Apache-2.0
// Construction options of a TcpServer: where to listen, limits, idle detection, framing and
// the timer. Plain data; validate() (which TcpServer's constructor calls) checks them.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "wheel/net/idle_watch.h"
#include "wheel/timer_options.h"

namespace wheel::net {

// How the bytes of a connection reach the handler.
enum class Framing : std::uint8_t {
  kBytes,  // ConnectionHandler::on_data, as read
  kLines,  // ConnectionHandler::on_line, through a LineFramer with max_line
};

struct TcpServerOptions {
  // IPv4 or IPv6 address, a host name, or "unix:PATH" for a unix-domain socket (see
  // resolve_address() and bind_unix_socket(): a stale file is replaced, a live one refused; the
  // file is removed when the server stops listening).
  std::string host = "127.0.0.1";
  // The permissions of a unix-domain socket's file (connecting needs write permission).
  // REQUIRES <= 0777.
  std::uint32_t unix_mode = 0660;
  // 0 picks a free port; TcpServer::port() tells which.
  std::uint16_t port = 0;
  // Bind with SO_REUSEPORT so that several processes can accept on one port (TCP only).
  bool reuse_port = false;
  // Completed connections the kernel queues for accept(); the kernel caps it at
  // net.core.somaxconn (4096 on current kernels), as Netty's default SO_BACKLOG is. A deep
  // queue rides out connect bursts while the loop is busy instead of dropping SYNs (which
  // makes the clients retry a second or more later). REQUIRES >= 1.
  int backlog = 4096;

  // Past this many open connections a new client gets the handler's reject_line() and is
  // closed. REQUIRES >= 1.
  std::size_t max_connections = 10'000;
  // Idle detection of every connection; all 0 (the default) watches nothing.
  IdleTimes idle;
  // netty#8912: output still draining to a slow reader is write activity.
  bool observe_output = false;

  Framing framing = Framing::kLines;
  // Longest line without "\r\n" (kLines). REQUIRES >= 1.
  std::size_t max_line = 4096;
  // Output queued beyond what the kernel took; past it the client is a slow consumer: closed.
  // REQUIRES >= 1.
  std::size_t max_output = std::size_t{64} * 1024;
  // A graceful shutdown aborts the connections still closing after this long. REQUIRES >= 0.
  std::chrono::milliseconds shutdown_grace = std::chrono::seconds(1);
  // A connection closed with output still queued (close_with, or after the client's EOF) is
  // reset if it has not taken that output after this long: a client that does not read
  // cannot hold its connection and buffers. REQUIRES 0 ..= kMaxIdleTime.
  std::chrono::milliseconds close_grace = std::chrono::seconds(5);

  // The server's LoopTimer (validated by the timer; its executor is replaced). The library
  // default tick is the timer's, 100 ms, as Netty's.
  TimerOptions timer;
};

// Throws std::invalid_argument naming the first option out of its range (the timer's options
// are the timer's to check). Safe from any thread.
void validate(const TcpServerOptions& options);

}  // namespace wheel::net
