// SPDX-License-Identifier: Apache-2.0
// TcpServer: a libuv TCP server that holds many long-lived connections for a
// ConnectionHandler, with a line framer, backpressure, idle detection on a LoopTimer, a
// connection limit and a graceful shutdown.
//
// Threads: the loop thread owns every socket, the connections, the handler calls and the
// timer's wheel (a LoopTimer: no thread of its own); timeouts run on the loop thread. shutdown()
// and port() are safe from any thread; everything else is loop thread only (or, before the
// loop runs, the thread that constructed the server).
//
// Loops: the server creates and runs its own loop (run()), or works on a loop it is given
// (the owner runs that loop; after shutdown() the server's handles close and the loop can end).
//
// Errors: invalid options and failures to listen throw; I/O errors are logged with uv_err_name
// and close the one connection concerned (on_close says why).
#pragma once

#include <uv.h>

#include <cstdint>
#include <memory>

#include "wheel/net/connection.h"
#include "wheel/net/connection_handler.h"
#include "wheel/net/loop_timer.h"
#include "wheel/net/tcp_server_counters.h"
#include "wheel/net/tcp_server_options.h"

namespace wheel::net {

class Reactor;

class TcpServer {
 public:
  // A server on its own new loop. Throws std::invalid_argument naming an invalid option (the
  // timer's own rule for options.timer), std::system_error when libuv fails. `handler` must
  // outlive the server.
  TcpServer(TcpServerOptions options, ConnectionHandler& handler);
  // A server on `loop`, which must outlive it. Loop thread only (or before the loop runs).
  TcpServer(uv_loop_t* loop, TcpServerOptions options, ConnectionHandler& handler);
  // REQUIRES: not listening, or the shutdown completed (run() returned, or the given loop ran
  // until stopped()). On a given loop the loop must run once more to finish closing handles.
  ~TcpServer();

  TcpServer(const TcpServer&) = delete;
  TcpServer& operator=(const TcpServer&) = delete;

  // Resolves the host, binds and listens; returns the bound port (0 for a "unix:PATH" host,
  // whose file the shutdown removes). Ignores SIGPIPE process-wide (a write to a reset socket
  // must fail with EPIPE, not kill). Throws std::invalid_argument for a host that does not
  // resolve, std::system_error when it cannot listen (a unix path where a server answers:
  // EADDRINUSE, naming the path). Call once.
  std::uint16_t listen();

  // Makes SIGINT and SIGTERM start a graceful shutdown. Call before the loop runs.
  void handle_signals();

  // Runs the own loop until a shutdown completes. REQUIRES: the server created its loop,
  // listen() succeeded, run() has not run before. The calling thread becomes the loop thread.
  void run();

  // Starts a graceful shutdown: stop accepting, on_shutdown(), the handler's goodbye() to every
  // client after its queued output, close them (reset those still writing after
  // shutdown_grace), close the timer and every handle of the server. run() returns (on a given
  // loop: stopped() becomes true) once that is done. Returns at once; a no-op once begun.
  // Safe from any thread.
  void shutdown();

  // True once the shutdown completed. Loop thread only.
  bool stopped() const;

  // The bound port; 0 before listen(). Safe from any thread.
  std::uint16_t port() const;

  // The open connection `id`, or nullptr (closed, closing, or never). Loop thread only.
  Connection* find(std::uint64_t id);

  // The server's timer, for the handler's own timeouts (they run on the loop thread).
  LoopTimer& timer();
  uv_loop_t* loop();
  const TcpServerOptions& options() const;
  TcpServerCounters counters() const;

 private:
  std::unique_ptr<Reactor> reactor_;
};

}  // namespace wheel::net
