// Server: a libuv TCP line server that holds many long-lived connections, answers heartbeats
// and closes the idle ones with a wheel::HashedWheelTimer (Netty's IdleStateHandler +
// LineBasedFrameDecoder). The protocol is in the README.
//
// Threads. The thread that calls run() is the loop thread: it owns the libuv loop and every
// socket. The timer's worker thread owns the wheel. An expired timeout does not run on the
// worker: the timer's executor pushes the job onto a mutex-protected queue and calls
// uv_async_send; the loop thread runs it. The job names its connection by a 64-bit id (slot +
// generation), never by pointer, and the loop looks the id up: a connection closed meanwhile
// is simply not found, so no job ever touches freed memory.
//
// Idle detection. Reads and writes only record the loop time. When an idle timeout fires, the
// loop re-checks: if the connection was active meanwhile, it schedules one new timeout for the
// remaining time (IdleStateHandler's technique). Each connection holds at most one live timeout
// per enabled idle kind; closing it cancels them.
//
// Errors: invalid options and failures to listen throw; I/O errors are logged with
// uv_err_name and close the one connection concerned.
#pragma once

#include <cstdint>
#include <memory>

#include "wheel/net/server_options.h"
#include "wheel/net/server_stats.h"

namespace wheel::net {

class ServerCore;

class Server {
 public:
  // Creates the loop and the timer; does not listen yet. Throws std::invalid_argument naming
  // an invalid option (tick < 1 ms, wheel_size 0 or > 2^30, max_line or max_output 0).
  explicit Server(ServerOptions options);
  // REQUIRES: run() is not running (it has returned, or never started).
  ~Server();

  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds and listens; returns the bound port (the chosen one when options.port is 0). Also
  // ignores SIGPIPE process-wide: a write to a reset socket must fail with EPIPE, not kill.
  // Throws std::system_error (or std::invalid_argument for a bad host) when it cannot listen.
  // Call once, before run(). run() may then be called on another thread (starting that thread
  // orders the two).
  std::uint16_t listen();

  // Makes SIGINT and SIGTERM start a graceful shutdown. Call before run(), like listen().
  void handle_signals();

  // Runs the loop until a shutdown completes: stop accepting, "BYE shutdown" to every client,
  // close all, stop the timer. Returns the final counters. The calling thread is the loop
  // thread. REQUIRES: listen() succeeded; run() has not run before.
  ServerStats run();

  // Starts a graceful shutdown (see run()); returns at once. A no-op once the shutdown began or
  // run() has returned. Safe from any thread.
  void shutdown();

  // The bound port; 0 before listen(). Safe from any thread after listen().
  std::uint16_t port() const;

 private:
  std::unique_ptr<ServerCore> core_;
};

}  // namespace wheel::net
