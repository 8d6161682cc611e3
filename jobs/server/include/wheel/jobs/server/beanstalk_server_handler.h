// SPDX-License-Identifier: Apache-2.0
// BeanstalkServerHandler: beanstalkd 1.12's protocol served by a wheel::net::TcpServer over an
// in-process JobQueue, so any libuv program can embed a beanstalkd-compatible server (wheel-jobs
// is one such program). It is the one front end (BeanstalkFront: parsing, held input, replies in
// request order, the output bound, drain mode) over the queue's backend (QueueBackend: the
// queue's sessions, group commit with the journal, parked changes while the log's disk is
// behind, the queue's timeouts and the log's housekeeping on the loop).
//
// Wiring: a JobQueue (the model), its QueueJournal (memory only, a DurableJournal, or another
// store), a BeanstalkDispatcher on that queue, and a TcpServer with Framing::kBytes whose handler
// is this object.
//
// Signals: attach() makes SIGUSR1 turn drain mode on (put answers DRAINING), as in beanstalkd.
// SIGTERM/SIGINT are the server's (TcpServer::handle_signals); on_shutdown() sets drain mode and
// closes the handler's loop handles.
//
// Threads: loop thread only (the TcpServer's loop), like the server it serves.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "wheel/jobs/model/job_queue.h"
#include "wheel/jobs/model/queue_journal.h"
#include "wheel/jobs/server/beanstalk_dispatcher.h"
#include "wheel/jobs/server/beanstalk_front.h"
#include "wheel/jobs/server/queue_backend.h"

namespace wheel::jobs {

// As the front's, with the in-process defaults (64 KiB held while a reserve waits).
using BeanstalkServerOptions = BeanstalkFrontOptions;

namespace detail {
// Built before the front that serves it (a base class is built before the members).
struct QueueBackendHolder {
  QueueBackendHolder(JobQueue& queue, QueueJournal& journal, BeanstalkDispatcher& dispatcher)
      : queue_backend(queue, journal, dispatcher) {}
  QueueBackend queue_backend;
};
}  // namespace detail

class BeanstalkServerHandler final : private detail::QueueBackendHolder, public BeanstalkFront {
 public:
  // `queue`, `journal` and `dispatcher` must outlive the handler (the dispatcher on `queue`,
  // `journal` the queue's). Throws std::invalid_argument for options out of range (see
  // BeanstalkFrontOptions).
  BeanstalkServerHandler(JobQueue& queue, QueueJournal& journal, BeanstalkDispatcher& dispatcher,
                         BeanstalkServerOptions options = {})
      : detail::QueueBackendHolder(queue, journal, dispatcher),
        BeanstalkFront(queue_backend, options) {}

  // A change to the queue made outside any connection (the web console's kick, delete, pause,
  // put): runs `change` at the queue's present time, then keeps the timer and the log's
  // housekeeping in step with it. Loop thread only.
  void run_outside(const std::function<void()>& change) { queue_backend.run_outside(change); }
};

}  // namespace wheel::jobs
