// SPDX-License-Identifier: Apache-2.0
// LineServer: wheel-server in a class: a net::TcpServer (tcp_server.h) running the line protocol
// (PING/PONG/DELAY/STATS/QUIT, see docs/wheel-server.md) as its handler, with idle closes ("BYE
// idle") and writer-idle heartbeats ("PING") from the IdleDetector.
//
// Threads. The thread that calls run() is the loop thread: it owns the libuv loop and every
// socket and the timer's wheel (loop_timer.h: no thread of its own); timeouts run on the loop
// thread and name their connection by id, never by pointer.
//
// Errors: invalid options and failures to listen throw; I/O errors are logged with
// uv_err_name and close the one connection concerned.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>

#include "wheel/net/tcp_server.h"
#include "wheel/server/line_server_options.h"
#include "wheel/server/server_stats.h"

namespace wheel::server {

// The metrics endpoint could not listen; what() names its address and the cause once.
class MetricsListenError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
  // "cannot serve metrics on HOST:PORT: Address already in use (EADDRINUSE)": what
  // MetricsHttpServer::listen() threw (`cause`), said once, for the address asked for. The
  // one wording of the single-process server and the --workers supervisor.
  static MetricsListenError from(const std::string& host, std::uint16_t port,
                                 const std::system_error& cause);
};

// Internal: LineServer's own parts (its options, handler, metrics and endpoint; line_server.cc).
// A base of LineServer so that they are made before the TcpServer that serves with them and
// destroyed after it (the server's destructor still calls the handler and runs the loop that
// closes the endpoint's handles).
struct LineServerParts;
class LineServerPartsOwner {
 protected:
  explicit LineServerPartsOwner(const LineServerOptions& options);
  ~LineServerPartsOwner();
  std::unique_ptr<LineServerParts> parts_;
};

// A net::TcpServer with the line protocol's handler and the metrics endpoint. Of the TcpServer
// it shows what an owner needs (the using-declarations below); listen() and run() are its own.
class LineServer : private LineServerPartsOwner, private net::TcpServer {
 public:
  // Creates the loop and the timer; does not listen yet. Throws std::invalid_argument naming
  // an invalid option (the timer's rule for tick and wheel_size; max_line, max_output or
  // max_connections or a delayed-bytes limit 0; a negative duration; an idle time over
  // net::kMaxIdleTime).
  explicit LineServer(LineServerOptions options);
  // REQUIRES: run() is not running (it has returned, or never started).
  ~LineServer();

  LineServer(const LineServer&) = delete;
  LineServer& operator=(const LineServer&) = delete;

  // Binds and listens (and, with options.metrics_port, listens for scrapes too); returns the
  // bound port (the chosen one when options.port is 0). Also
  // ignores SIGPIPE process-wide: a write to a reset socket must fail with EPIPE, not kill.
  // Throws std::system_error (or std::invalid_argument for a host that does not resolve) when
  // it cannot listen, MetricsListenError when the metrics endpoint cannot.
  // Call once, before run(). run() may then be called on another thread (starting that thread
  // orders the two).
  std::uint16_t listen();

  // Makes SIGINT and SIGTERM start a graceful shutdown. Call before run(), like listen().
  using net::TcpServer::handle_signals;

  // Runs the loop until a shutdown completes: stop accepting, "BYE shutdown" to every client,
  // close all, stop the timer. Returns the final counters. The calling thread is the loop
  // thread. REQUIRES: listen() succeeded; run() has not run before.
  ServerStats run();

  // Starts a graceful shutdown (see run()); returns at once. A no-op once the shutdown began or
  // run() has returned. Safe from any thread.
  using net::TcpServer::shutdown;

  // The bound port; 0 before listen(). Safe from any thread after listen().
  using net::TcpServer::port;

  // The port of the metrics endpoint; 0 without one or before listen(). Safe from any thread
  // after listen().
  std::uint16_t metrics_port() const;
};

}  // namespace wheel::server
