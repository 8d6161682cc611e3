// SPDX-License-Identifier: Apache-2.0
// BeanstalkFront: beanstalkd's connections on a wheel::net::TcpServer, over one
// BeanstalkBackend (beanstalk_backend.h: the in-process queue or the Redis store). The one
// place that parses requests, holds input, orders replies and bounds what a client may make
// the server hold.
//
// Per connection: a RequestParser, the session's tubes (SessionTubes: use, watch, ignore,
// list-tube-used and list-tubes-watched are answered here, by beanstalkd's rules, in their
// place among the connection's requests; the backend hears each change) and one reply slot per
// request started. A request starts
// when the backend admits it (Admit) and no earlier one is a barrier (Flow); the replies are
// written strictly in request order, each once every slot before it is complete. Input that
// cannot run yet is held: while a barrier (a reserve that waits, a Redis round trip) or the
// in-flight bounds stop the connection, at most max_held_input bytes (beyond: the connection
// is closed); while the backend parks a request (Admit::kLater) or the output is over its
// bound, the read that arrived is held and the socket paused.
//
// Output bound: replies are built before the kernel takes them, so a client that pipelines
// peeks or list-tubes and reads nothing could make the server hold gigabytes. Once a
// connection's replies not yet taken (with the backend, in slots, queued) reach
// max_queued_output, its further requests wait and its socket is not read until the client
// took all but half. So one connection holds at most max_queued_output plus one reply (a reply
// is never cut: one list-tubes may be larger).
//
// quit closes once every earlier reply is written; a client that hangs up is closed once its
// replies are written, at once while its reserve waits (beanstalkd drops it; the backend
// releases its jobs). SIGUSR1 turns drain mode on (puts answer DRAINING), as in beanstalkd.
//
// Threads: loop thread only (the TcpServer's loop).
#pragma once

#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "wheel/jobs/server/beanstalk_backend.h"
#include "wheel/net/connection_handler.h"
#include "wheel/net/loop_timer.h"
#include "wheel/net/tcp_server.h"

namespace wheel::jobs {

struct BeanstalkFrontOptions {
  // Largest job body a put may announce (JOB_TOO_BIG beyond): 0 .. beanstalk::kMaxMaxJobSize.
  std::uint32_t max_job_size = 65'535;
  // Bytes a client may send while its requests cannot run; beyond it the connection is closed.
  // REQUIRES >= 1.
  std::size_t max_held_input = 64 * 1024;
  // Replies a connection may have waiting (with the backend, in slots, queued) before its
  // further requests wait; they resume once it is down to half. REQUIRES >= 2.
  std::size_t max_queued_output = std::size_t{1} << 20;
  // Tubes one connection may watch at once (a reserve looks at each of them; OUT_OF_MEMORY
  // beyond). REQUIRES >= 1.
  std::size_t max_watched = 1'024;
  // What SIGUSR1's log line says first ("beanstalk server", "wheel-jobs").
  std::string_view log_name = "beanstalk server";
};

struct BeanstalkFrontConn;

class BeanstalkFront : public net::ConnectionHandler {
 public:
  // `backend` must outlive the front. Throws std::invalid_argument for a max_job_size beyond
  // beanstalk::kMaxMaxJobSize, a max_held_input or max_watched of 0 or a max_queued_output
  // below 2.
  BeanstalkFront(BeanstalkBackend& backend, BeanstalkFrontOptions options);
  // REQUIRES: the server no longer calls the front (it was shut down and its loop ran).
  ~BeanstalkFront() override;
  BeanstalkFront(const BeanstalkFront&) = delete;
  BeanstalkFront& operator=(const BeanstalkFront&) = delete;

  // Binds the front to `server` (which must use this front and outlive it) and the backend to
  // the front: its timeouts run on `timer` (on the server's loop, outliving the front; a test
  // gives one on a ManualClock), or when null on a LoopTimer of the front's own (1 ms tick)
  // closed at shutdown. Starts SIGUSR1's drain mode. Call once, before the loop runs.
  void attach(net::TcpServer& server, net::LoopTimer* timer = nullptr);
  // Also runs `also` once a shutdown has let the backend finish (e.g. close a metrics server
  // on the same loop, the Redis clients).
  void on_shutdown_also(std::function<void()> also) { shutdown_also_ = std::move(also); }

  // Clients with a connection open.
  std::size_t clients() const { return conns_.size(); }
  // The server attach() bound, or null.
  net::TcpServer* server() const { return server_; }

  // For the backend: the request of `conn` it parked (Admit::kLater) may be admitted again.
  void resume(std::uint64_t conn);
  // For the backend: writes what completed while gathering() was true.
  void write_gathered();

  // net::ConnectionHandler (called by the TcpServer).
  void on_open(net::Connection& c) override;
  void on_data(net::Connection& c, std::string_view bytes) override;
  void on_input_end(net::Connection& c) override;
  void on_close(net::Connection& c, net::CloseReason reason) override;
  void on_shutdown() override;
  // Resumes a connection whose output was over max_queued_output once it is down to half.
  void on_output_below(net::Connection& c) override;

 private:
  friend class ReplySlot;
  using Conn = BeanstalkFrontConn;  // internal (src/beanstalk_front_conn.h)
  Conn* find(std::uint64_t conn) const;
  // Parses and starts the connection's requests while it may (see above).
  void pump(Conn* conn);
  // Starts one request in a new slot.
  void start(Conn* conn, beanstalk::Request&& request);
  // Answers one of the session's own requests (SessionTubes::runs) in a new slot, at once.
  void run_session(Conn* conn, const beanstalk::Request& request);
  // ReplySlot: fills slot `seq` of `conn`, writes what is in order and goes on.
  void fill(std::uint64_t conn, std::uint64_t seq, std::string_view reply);
  // ReplySlot::complete_batch.
  void fill_batch(std::span<const SlotEnd> batch, std::string_view replies);
  // After slots of `conn` completed: writes what is in order and goes on.
  void filled(Conn* conn);
  void abort(std::uint64_t conn);
  // Writes the complete replies at the head; whether the connection is still there.
  bool write_ready(Conn* conn);
  bool send(Conn* conn, std::string_view bytes);
  // Puts `conn` on the list write_gathered() goes through (once).
  void list(Conn* conn);
  // Replies of `conn` not yet taken by the kernel: with the backend, in slots, queued.
  std::size_t backlog(const Conn* conn) const;
  std::size_t backlog(const Conn* conn, const net::Connection* c) const;  // `c`: its connection
  // A blocked connection: asks for on_output_below once it may be down to half.
  void watch_output(Conn* conn);
  // Closes a connection that quit or hung up once nothing more is owed.
  void maybe_close(Conn* conn);

  BeanstalkBackend& backend_;
  BeanstalkFrontOptions options_;
  net::TcpServer* server_ = nullptr;
  std::unique_ptr<net::LoopTimer> own_timer_;
  uv_signal_t* drain_ = nullptr;  // SIGUSR1; freed by its close callback
  std::unordered_map<std::uint64_t, std::unique_ptr<Conn>> conns_;
  mutable Conn* last_ = nullptr;         // the last one find() found
  std::vector<std::uint64_t> gathered_;  // connections with gathered bytes
  std::function<void()> shutdown_also_;
};

}  // namespace wheel::jobs
