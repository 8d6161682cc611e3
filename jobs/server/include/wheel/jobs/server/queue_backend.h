// SPDX-License-Identifier: Apache-2.0
// QueueBackend: the in-process JobQueue behind the beanstalkd front end (BeanstalkFront), memory
// only or on the log (a DurableJournal). One queue session per connection; requests run on the
// queue at once, through the BeanstalkDispatcher.
//
// Replies: the replies of one batch (the requests the front ran from one read) complete
// together once the journal says the changes behind them are durable (group commit; at once
// when memory only); a batch that recorded nothing, of a connection with no earlier batch
// waiting, completes at once even while other connections' changes wait for a slow disk. When
// the log stopped before they became durable the connection closes instead (no acknowledgement).
// A change that arrives while the journal says changes wait (a log whose disk is behind) is
// parked (Admit::kLater) and resumed, oldest first, once they may go on; reads, reserves and
// stats go on answering.
//
// Time: the queue's clock is the front's net::LoopTimer's (the steady clock read afresh before
// each request, or a test's ManualClock), in whole milliseconds, truncated; the queue pushes
// every deadline out by that millisecond (JobQueue::set_clock_granularity), so no delay, TTR,
// pause or reserve timeout ends early. One timeout on that timer is kept at the queue's
// next_due(): the queue wakes its own waiting reserves (ReserveListener) and ends TTRs there.
// With a log, one more at its next_poll_ms(), and the log's housekeeping is polled after each
// read, then and whenever the log wakes the loop (a uv_async_t this backend owns, handed to the
// journal with set_wakeup(): the log's sync thread calls it after each sync).
//
// Threads: loop thread only (the front's loop).
#pragma once

#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "wheel/jobs/model/job_queue.h"
#include "wheel/jobs/model/queue_journal.h"
#include "wheel/jobs/server/beanstalk_backend.h"
#include "wheel/jobs/server/beanstalk_dispatcher.h"
#include "wheel/net/loop_timer.h"

namespace wheel::jobs {

class QueueBackend final : public BeanstalkBackend, public ReserveListener {
 public:
  // `queue`, `journal` and `dispatcher` must outlive the backend (the dispatcher on `queue`,
  // `journal` the queue's). The backend becomes the queue's ReserveListener.
  QueueBackend(JobQueue& queue, QueueJournal& journal, BeanstalkDispatcher& dispatcher);
  // Closes the journal's wake-up (the loop must run once more to finish closing it).
  ~QueueBackend() override;
  QueueBackend(const QueueBackend&) = delete;
  QueueBackend& operator=(const QueueBackend&) = delete;

  // A change to the queue made outside any connection (the web console's kick, delete, pause,
  // put): runs `change` at the queue's present time, then keeps the timer and the log's
  // housekeeping in step with it. Loop thread only.
  void run_outside(const std::function<void()>& change);

  // BeanstalkBackend
  void attach(BeanstalkFront& front, net::LoopTimer& timer) override;
  void open(std::uint64_t conn, const SessionTubes& tubes) override;
  void close(std::uint64_t conn) override;
  // Keeps the queue's session in step (JobQueue::use, watch, ignore): a tube beyond the queue's
  // max_tubes is refused.
  bool change_tubes(std::uint64_t conn, TubeChange change, std::string_view tube) override;
  beanstalk::CommandCounts& command_counts() override { return dispatcher_.command_counts(); }
  Admit admit(std::uint64_t conn, const beanstalk::Request& request,
              std::size_t in_flight) override;
  Flow run(std::uint64_t conn, beanstalk::Request&& request, ReplySlot slot) override;
  void end_batch(std::uint64_t conn) override;
  void after_batch() override;
  std::size_t held_reply_bytes(std::uint64_t conn) const override;
  bool gathering() const override { return delivering_; }
  void set_draining() override { queue_.set_draining(true); }
  void shutdown(std::function<void()> done) override;
  void detach() override;

  // ReserveListener (called by the queue): completes a blocked reserve.
  void on_reserve_done(SessionId session, const ReserveResult& result) override;

 private:
  struct Session {
    SessionId id = 0;
    std::string out;  // replies of the batch, in order
    // The batch's slots and where each one's reply ends in `out`.
    std::vector<SlotEnd> batch;
    ReplySlot waiting;             // the reserve that waits
    std::size_t unsent_bytes = 0;  // replies of batches waiting for the journal
    std::uint32_t unsent = 0;      // those batches
  };
  Session* find(std::uint64_t conn) const;
  // Runs the parked changes' connections once changes may go on.
  void resume_parked();
  Millis clock_ms() const;  // the queue's clock: see "Time" above
  void advance_clock();
  // Keep the timeout for the queue's next_due() (`due_`) and, with a log, the one for its
  // next_poll_ms() (`poll_`) where they belong now.
  void arm_timer();
  void arm_poll(std::uint64_t now_ms);
  void poll_log();
  void cancel_timeouts();

  JobQueue& queue_;
  QueueJournal& journal_;
  BeanstalkDispatcher& dispatcher_;
  JournalHousekeeping* housekeeping_ = nullptr;  // the journal's, or null
  uv_async_t* wake_ = nullptr;  // the journal's wakeup; freed by its close callback
  BeanstalkFront* front_ = nullptr;
  net::LoopTimer* timer_ = nullptr;  // null before attach() and after the shutdown began
  net::LoopTimer::Handle due_, poll_;
  std::optional<Millis> due_at_;                         // what due_ is set for
  std::uint64_t poll_at_ = UINT64_MAX;                   // what poll_ is set for
  std::unordered_map<std::uint64_t, Session> sessions_;  // by connection
  mutable std::uint64_t last_conn_ = 0;                  // the last one find() found
  mutable Session* last_ = nullptr;
  std::unordered_map<SessionId, std::uint64_t> conns_;  // session -> connection
  std::vector<std::uint64_t> parked_;  // connections with a parked change, oldest first
  bool delivering_ = false;            // completing a batch: the front gathers its writes
};

}  // namespace wheel::jobs
