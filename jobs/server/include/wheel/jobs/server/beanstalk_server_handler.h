// SPDX-License-Identifier: Apache-2.0
// BeanstalkServerHandler: beanstalkd 1.12's protocol served by a wheel::net::TcpServer, so any
// libuv program can embed a beanstalkd-compatible server (wheel-jobs is one such program).
//
// Wiring: a JobQueue (the model), its JobJournal (memory only, a LogJournal, or another store),
// a BeanstalkDispatcher on that queue, and a TcpServer with Framing::kBytes whose handler is this
// object. Per connection: one RequestParser and one queue session. The replies of one read are
// sent together once the journal says the changes behind them are durable (group commit; at
// once when memory only). A reserve that waits stops the connection's requests, as beanstalkd
// stops reading it: bytes that arrive meanwhile are held (at most max_held_input; beyond that
// the connection is closed) and run when the reserve ends. A change that arrives while the
// journal says changes wait (a log whose disk is behind) is parked the same way, its input held
// behind it, and runs once they may go on; reads, reserves and stats go on answering (a batch
// that recorded nothing is answered at once when its client has no earlier reply waiting). A client
// that hangs up releases its reserved jobs and drops its waiting reserve.
//
// Output bound: replies are built before the kernel takes them, so a client that pipelines
// peeks or list-tubes and reads nothing could make the server hold gigabytes. Once a
// connection's replies not yet taken (being built, waiting for the journal, queued) reach
// max_queued_output, its further requests wait like those behind a waiting reserve (held) and
// its socket is not read, until the client took all but half of it. So one connection holds at
// most max_queued_output plus one reply (a reply is never cut: one list-tubes may be larger).
//
// Time: the queue's clock is a net::LoopTimer's (the steady clock read afresh before each
// request, or a test's ManualClock), in whole milliseconds, truncated; the queue pushes every
// deadline out by that millisecond (JobQueue::set_clock_granularity), so no delay, TTR, pause or
// reserve timeout ends early. One timeout on that timer is kept at the queue's next_due() and,
// with a log, one at its next_poll_ms(), so they and the log's housekeeping run on the loop. The
// timer is the handler's own (1 ms tick) unless attach() is given one.
//
// A journal with housekeeping of its own (JobJournal::housekeeping(): a LogJournal) is run by
// the handler on the server's loop: polled after each read, when its next_poll_ms() says, and
// whenever it wakes the loop (a uv_async_t the handler owns, handed to the journal with
// set_wakeup(): the log's sync thread calls it after each sync, so replies whose changes are
// now durable are sent).
//
// Signals: attach() makes SIGUSR1 turn drain mode on (put answers DRAINING), as in beanstalkd.
// SIGTERM/SIGINT are the server's (TcpServer::handle_signals); on_shutdown() sets drain mode and
// closes the handler's loop handles.
//
// Threads: loop thread only (the TcpServer's loop), like the server it serves.
#pragma once

#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "wheel/jobs/model/job_journal.h"
#include "wheel/jobs/model/job_queue.h"
#include "wheel/jobs/server/beanstalk_dispatcher.h"
#include "wheel/net/connection_handler.h"
#include "wheel/net/loop_timer.h"
#include "wheel/net/tcp_server.h"

namespace wheel::jobs {

struct BeanstalkServerOptions {
  // Largest job body a put may announce (JOB_TOO_BIG beyond): 0 .. beanstalk::kMaxMaxJobSize.
  std::uint32_t max_job_size = 65'535;
  // Bytes a client may send while its reserve waits; beyond it the connection is closed.
  std::size_t max_held_input = 64 * 1024;
  // Replies a connection may have waiting (built, with the journal, or queued) before its
  // further requests wait; they resume once it is down to half. REQUIRES >= 2.
  std::size_t max_queued_output = std::size_t{1} << 20;
};

class BeanstalkServerHandler final : public net::ConnectionHandler, public ReserveListener {
 public:
  // `queue`, `journal` and `dispatcher` must outlive the handler (and the dispatcher must be on
  // `queue`, and `journal` be the queue's). The handler becomes the queue's ReserveListener. Throws
  // std::invalid_argument for a max_job_size beyond beanstalk::kMaxMaxJobSize, a max_held_input of
  // 0 or a max_queued_output below 2.
  BeanstalkServerHandler(JobQueue& queue, JobJournal& journal, BeanstalkDispatcher& dispatcher,
                         BeanstalkServerOptions options = {});
  // Frees the per-connection state left (the server closes connections before; see below) and
  // closes the journal's wake-up (the loop must run once more to finish closing it).
  // REQUIRES: the server no longer calls the handler (it was shut down and its loop ran).
  ~BeanstalkServerHandler() override;
  BeanstalkServerHandler(const BeanstalkServerHandler&) = delete;
  BeanstalkServerHandler& operator=(const BeanstalkServerHandler&) = delete;

  // Binds the handler to `server` (which must use this handler and outlive it): starts the
  // Binds the handler to `server` (which must use this handler and outlive it): starts the
  // queue's timeouts on `timer` (advancing the queue to its clock), SIGUSR1's drain mode and,
  // for a journal with housekeeping, its wake-up (a uv_async_t the handler owns) and its polls
  // (and polls it once). `timer`: on the server's loop, outliving the handler; the queue's clock
  // is its clock_now() in ms, so the queue must have been made at that time (a test gives one on
  // a ManualClock). Null: the handler makes its own on the server's loop (1 ms tick) and closes
  // it at shutdown. Call once, on the loop thread, before the loop runs.
  void attach(net::TcpServer& server, net::LoopTimer* timer = nullptr);
  // Also runs `also` when a shutdown begins (e.g. close a metrics server on the same loop).
  void on_shutdown_also(std::function<void()> also) { shutdown_also_ = std::move(also); }

  // A change to the queue made outside any connection (the web console's kick, delete, pause,
  // put): runs `change` at the queue's present time, then keeps the timer and the log's
  // housekeeping in step with it (a put with a delay may be due before what the timer waits
  // for; a kick may serve a waiting reserve). Loop thread only.
  void run_outside(const std::function<void()>& change);

  // Clients with a connection open.
  std::size_t clients() const { return clients_.size(); }

  // net::ConnectionHandler (called by the TcpServer).
  void on_open(net::Connection& c) override;
  void on_data(net::Connection& c, std::string_view bytes) override;
  void on_input_end(net::Connection& c) override;
  void on_close(net::Connection& c, net::CloseReason reason) override;
  void on_shutdown() override;
  // Resumes a connection whose output was over max_queued_output once it is down to half.
  void on_output_below(net::Connection& c) override;
  // ReserveListener (called by the queue): sends the end of a blocked reserve and resumes the
  // client's held requests.
  void on_reserve_done(SessionId session, const ReserveResult& result) override;

 private:
  struct Client;
  // Parses and runs `bytes` of `client` until they run out, a reserve waits or a change is
  // parked.
  void run(Client* client, std::string_view bytes);
  // Runs one request; false when the client's requests stop (a reserve waits, a change is
  // parked because the journal says changes wait, quit).
  bool dispatch(Client* client, beanstalk::Request&& request);
  // Runs the parked changes (and the input held behind them) once changes may go on.
  void resume_parked();
  // Reads the client of `session` again if it was paused and nothing holds it any more.
  void resume_reading(SessionId session);
  // Sends `client`'s gathered replies once the journal says they are durable.
  void flush(Client* client);
  // Replies of `client` not yet taken by the kernel: being built, with the journal, queued.
  static std::size_t backlog(const Client* client, const net::Connection* c);
  // A blocked client: asks its connection for on_output_below at half the bound.
  void watch_output(Client* client);
  Millis clock_ms() const;  // the queue's clock: see "Time" above
  void advance_clock();
  // Keep the timeout for the queue's next_due() (`due_`) and, with a log, the one for its
  // next_poll_ms() (`poll_`) where they belong now.
  void arm_timer();
  void arm_poll(std::uint64_t now_ms);
  void poll_log();

  JournalHousekeeping* housekeeping_ = nullptr;  // the journal's, or null
  uv_async_t* wake_ = nullptr;  // the journal's wakeup; freed by its close callback

  JobQueue& queue_;
  JobJournal& journal_;
  BeanstalkDispatcher& dispatcher_;
  BeanstalkServerOptions options_;
  net::TcpServer* server_ = nullptr;
  net::LoopTimer* timer_ = nullptr;  // null before attach() and after the shutdown began
  std::unique_ptr<net::LoopTimer> own_timer_;
  net::LoopTimer::Handle due_, poll_;
  std::optional<Millis> due_at_;        // what due_ is set for
  std::uint64_t poll_at_ = UINT64_MAX;  // what poll_ is set for
  uv_signal_t* drain_ = nullptr;        // SIGUSR1; freed by its close callback
  std::unordered_map<SessionId, Client*> clients_;
  std::vector<SessionId> parked_;  // clients with a parked change, oldest first
  std::function<void()> shutdown_also_;
};

}  // namespace wheel::jobs
