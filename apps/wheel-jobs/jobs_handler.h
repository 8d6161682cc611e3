// SPDX-License-Identifier: Apache-2.0
// Internal to wheel-jobs. JobsHandler: beanstalkd's protocol on a wheel::net::TcpServer. One
// RequestParser and one JobQueue session per connection; requests go through the
// BeanstalkDispatcher; the replies of one read are sent together, once the journal says the
// changes behind them are durable (group commit; at once when memory only). A reserve that
// waits stops the connection's requests: bytes that arrive meanwhile are held (at most
// kMaxHeldInput, beyond it the connection is closed) and parsed when the reserve ends. The
// queue's clock is the loop's (uv_now); one uv_timer is armed for the queue's next_due().
//
// Loop thread only.
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "wheel/jobs/beanstalk_dispatcher.h"
#include "wheel/jobs/beanstalk_protocol.h"
#include "wheel/jobs/job_journal.h"
#include "wheel/jobs/job_queue.h"
#include "wheel/jobs/log_journal.h"
#include "wheel/net/connection_handler.h"
#include "wheel/net/tcp_server.h"

namespace wheel::jobs_app {

// Bytes a client may send while its reserve waits (beanstalkd stops reading it meanwhile).
inline constexpr std::size_t kMaxHeldInput = 64 * 1024;

class JobsHandler final : public net::ConnectionHandler, public jobs::ReserveListener {
 public:
  // `queue`, `journal` and `dispatcher` must outlive the handler; attach() before the loop runs.
  JobsHandler(jobs::JobQueue& queue, jobs::JobJournal& journal,
              jobs::BeanstalkDispatcher& dispatcher, std::uint32_t max_job_size);
  ~JobsHandler() override;

  // Binds the handler to its server (for find()), starts the queue's timer on its loop and
  // makes SIGUSR1 turn drain mode on (puts answer DRAINING), as in beanstalkd.
  void attach(net::TcpServer& server);
  // With a durable log: its housekeeping runs after each read, after each of its wakeups
  // (on_log_wakeup, from the loop's uv_async) and when next_poll_ms() says. Call after attach().
  void attach_log(jobs::LogJournal& log);
  void on_log_wakeup();

  void on_open(net::Connection& c) override;
  void on_data(net::Connection& c, std::string_view bytes) override;
  void on_input_end(net::Connection& c) override;
  void on_close(net::Connection& c, net::CloseReason reason) override;
  void on_shutdown() override;
  // Also runs `also` when a shutdown begins (close other handles of the loop).
  void on_shutdown_also(std::function<void()> also) { shutdown_also_ = std::move(also); }
  void on_reserve_done(jobs::SessionId session, const jobs::ReserveResult& result) override;

 private:
  struct Client;
  // Parses and runs `bytes` of `client` until they run out or a reserve waits.
  void run(Client* client, std::string_view bytes);
  // Sends `client`'s gathered replies once the journal says they are durable.
  void flush(Client* client);
  void advance_clock();
  void arm_timer();
  static void on_timer(uv_timer_t* timer);
  void poll_log();

  jobs::LogJournal* log_ = nullptr;
  uv_timer_t* log_timer_ = nullptr;  // next_poll_ms; freed by its close callback

  jobs::JobQueue& queue_;
  jobs::JobJournal& journal_;
  jobs::BeanstalkDispatcher& dispatcher_;
  std::uint32_t max_job_size_;
  net::TcpServer* server_ = nullptr;
  uv_timer_t* timer_ = nullptr;   // freed by its close callback
  uv_signal_t* drain_ = nullptr;  // SIGUSR1; freed by its close callback
  std::unordered_map<jobs::SessionId, Client*> clients_;
  std::function<void()> shutdown_also_;
};

}  // namespace wheel::jobs_app
