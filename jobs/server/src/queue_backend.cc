// SPDX-License-Identifier: Apache-2.0
#include "wheel/jobs/server/queue_backend.h"

#include <chrono>
#include <string_view>
#include <utility>
#include <variant>

#include "wheel/jobs/server/beanstalk_front.h"

namespace wheel::jobs {

namespace {

// Room of a session's reply buffer kept from one batch to the next.
constexpr std::size_t kKeptReplyBytes = 64 * 1024;

// The requests that record a change in the journal (the others never wait for its disk).
bool changes(const beanstalk::Request& r) {
  return std::holds_alternative<beanstalk::Put>(r) ||
         std::holds_alternative<beanstalk::Delete>(r) ||
         std::holds_alternative<beanstalk::Release>(r) ||
         std::holds_alternative<beanstalk::Bury>(r) || std::holds_alternative<beanstalk::Kick>(r) ||
         std::holds_alternative<beanstalk::KickJob>(r);
}

}  // namespace

QueueBackend::QueueBackend(JobQueue& queue, QueueJournal& journal, BeanstalkDispatcher& dispatcher)
    : queue_(queue),
      journal_(journal),
      dispatcher_(dispatcher),
      housekeeping_(journal.housekeeping()) {
  queue_.set_listener(this);
  // The queue's clock is clock_ms(), truncated to the millisecond: up to 1 ms behind.
  queue_.set_clock_granularity(Millis(1));
}

QueueBackend::~QueueBackend() {
  queue_.set_listener(nullptr);
  if (wake_ != nullptr) {
    // Kept open through the shutdown (replies made durable meanwhile are still sent); once
    // set_wakeup() returns the journal's thread no longer touches it.
    housekeeping_->set_wakeup({});
    uv_close(reinterpret_cast<uv_handle_t*>(wake_),
             [](uv_handle_t* h) { delete reinterpret_cast<uv_async_t*>(h); });
  }
  cancel_timeouts();
}

void QueueBackend::attach(BeanstalkFront& front, net::LoopTimer& timer) {
  front_ = &front;
  timer_ = &timer;
  advance_clock();
  if (housekeeping_ == nullptr) return;
  wake_ = new uv_async_t;
  uv_async_init(timer.loop(), wake_,
                [](uv_async_t* a) { static_cast<QueueBackend*>(a->data)->poll_log(); });
  wake_->data = this;
  uv_unref(reinterpret_cast<uv_handle_t*>(wake_));  // never keeps the loop running
  housekeeping_->set_wakeup([wake = wake_] { uv_async_send(wake); });
  poll_log();
}

QueueBackend::Session* QueueBackend::find(std::uint64_t conn) const {
  // Most lookups in a row are of one connection (its requests, their batch, the bound).
  if (last_ != nullptr && last_conn_ == conn) return last_;
  auto it = sessions_.find(conn);
  if (it == sessions_.end()) return nullptr;
  last_conn_ = conn;
  last_ = const_cast<Session*>(&it->second);
  return last_;
}

void QueueBackend::open(std::uint64_t conn, const SessionTubes&) {
  const SessionId id = queue_.open_session();
  sessions_[conn].id = id;
  conns_.emplace(id, conn);
}

void QueueBackend::close(std::uint64_t conn) {
  auto it = sessions_.find(conn);
  if (it == sessions_.end()) return;
  const SessionId id = it->second.id;
  if (last_ == &it->second) last_ = nullptr;
  sessions_.erase(it);
  conns_.erase(id);
  queue_.close_session(id);  // releases its reserved jobs, may serve other waiters
  arm_timer();
}

bool QueueBackend::change_tubes(std::uint64_t conn, TubeChange change, std::string_view tube) {
  Session* s = find(conn);
  if (s == nullptr) return false;
  switch (change) {
    case TubeChange::kUse:
      return queue_.use(s->id, tube) == Outcome::kOk;
    case TubeChange::kWatch:
      return queue_.watch(s->id, tube) == Outcome::kOk;
    case TubeChange::kIgnore:
      queue_.ignore(s->id, tube);  // may drop the tube
      break;
  }
  return true;
}

Admit QueueBackend::admit(std::uint64_t conn, const beanstalk::Request& request, std::size_t) {
  if (!changes(request) || !journal_.changes_wait()) return Admit::kNow;
  parked_.push_back(conn);
  return Admit::kLater;
}

Flow QueueBackend::run(std::uint64_t conn, beanstalk::Request&& request, ReplySlot slot) {
  Session* s = find(conn);
  if (s == nullptr) {
    slot.complete({});
    return Flow::kGoOn;
  }
  // Each request on the present: those before it in this read took their time.
  if (timer_ != nullptr) queue_.advance(clock_ms());
  switch (dispatcher_.handle(s->id, std::move(request), s->out)) {
    case BeanstalkDispatcher::Next::kWaiting:
      s->waiting = slot;
      return Flow::kWaits;
    case BeanstalkDispatcher::Next::kContinue:
    case BeanstalkDispatcher::Next::kClose:  // quit: no reply; the front closes
      break;
  }
  s->batch.push_back({slot, s->out.size()});
  return Flow::kGoOn;
}

void QueueBackend::end_batch(std::uint64_t conn) {
  Session* s = find(conn);
  if (s == nullptr || s->batch.empty()) return;
  // Copied out, not moved: the session's buffers keep their room for the next batch (no
  // regrowth per batch), unless a large reply made them large.
  std::string out = s->out.capacity() > kKeptReplyBytes ? std::move(s->out) : s->out;
  s->out.clear();
  std::vector<SlotEnd> batch(s->batch.begin(), s->batch.end());
  s->batch.clear();
  s->unsent_bytes += out.size();
  // Completed when the changes behind these replies are durable; the connection may be gone
  // then. A batch with no earlier one of this connection waiting answers at once when it
  // recorded nothing, even while other connections' changes wait for a slow disk.
  auto send = [this, conn, out = std::move(out), batch = std::move(batch)] {
    Session* owner = find(conn);
    if (owner == nullptr) return;
    owner->unsent--;
    owner->unsent_bytes -= out.size();
    if (journal_.calling_back_lost()) {
      // These changes never became durable (the log stopped): no acknowledgement, the client
      // sees the connection close instead.
      batch.front().slot.abort();
      return;
    }
    delivering_ = true;  // the front writes what is complete once, after it
    ReplySlot::complete_batch(batch, out);
    delivering_ = false;
    front_->write_gathered();
  };
  if (s->unsent++ == 0) {
    journal_.when_durable_or_now(std::move(send));
  } else {
    journal_.when_durable(std::move(send));
  }
}

std::size_t QueueBackend::held_reply_bytes(std::uint64_t conn) const {
  const Session* s = find(conn);
  return s == nullptr ? 0 : s->out.size() + s->unsent_bytes;
}

void QueueBackend::on_reserve_done(SessionId session, const ReserveResult& result) {
  auto it = conns_.find(session);
  if (it == conns_.end()) return;
  const std::uint64_t conn = it->second;
  Session* s = find(conn);
  if (s == nullptr || !s->waiting) return;
  dispatcher_.append_reserve_end(session, result, s->out);
  s->batch.push_back({std::exchange(s->waiting, {}), s->out.size()});
  end_batch(conn);
  arm_timer();
}

void QueueBackend::after_batch() {
  arm_timer();
  poll_log();
}

void QueueBackend::resume_parked() {
  // Taken out first: running a connection's requests may park it again (and the journal
  // decides afresh before each change).
  std::vector<std::uint64_t> parked;
  parked.swap(parked_);
  for (std::size_t i = 0; i < parked.size(); ++i) {
    if (journal_.changes_wait()) {
      parked_.insert(parked_.end(), parked.begin() + static_cast<std::ptrdiff_t>(i), parked.end());
      return;
    }
    front_->resume(parked[i]);
  }
}

void QueueBackend::poll_log() {
  if (housekeeping_ == nullptr || timer_ == nullptr) return;
  const auto now_ms = static_cast<std::uint64_t>(clock_ms().count());
  housekeeping_->poll(now_ms);  // may send replies now durable, which may run held requests
  if (!parked_.empty()) resume_parked();
  arm_poll(now_ms);
  arm_timer();
}

void QueueBackend::arm_poll(std::uint64_t now_ms) {
  if (timer_ == nullptr) return;
  const std::uint64_t next = housekeeping_->next_poll_ms();
  if (next == poll_at_ && (poll_ || next == UINT64_MAX)) return;
  if (poll_) timer_->cancel(poll_);
  poll_.reset();
  poll_at_ = next;
  if (next == UINT64_MAX) return;
  poll_ = timer_->new_timeout(
      [this] {
        poll_.reset();
        poll_at_ = UINT64_MAX;
        poll_log();
      },
      std::chrono::milliseconds(next > now_ms ? next - now_ms : 0));
}

Millis QueueBackend::clock_ms() const {
  // Read afresh, not uv_now(): the loop reads its time once per turn, and a callback of the
  // turn that waited (a sync of the id lease file, a large reply) would leave it behind by that
  // much, and deadlines started then would end early by it. The timer's clock is the steady
  // clock at full resolution (the loop's may be its coarse variant, up to a tick behind).
  return std::chrono::duration_cast<Millis>(timer_->clock_now());
}

void QueueBackend::advance_clock() {
  if (timer_ == nullptr) return;
  queue_.advance(clock_ms());
  arm_timer();
}

void QueueBackend::run_outside(const std::function<void()>& change) {
  if (timer_ != nullptr) queue_.advance(clock_ms());
  change();
  arm_timer();
  poll_log();
}

void QueueBackend::arm_timer() {
  if (timer_ == nullptr) return;
  const std::optional<Millis> due = queue_.next_due();
  if (due == due_at_ && (due_ || !due)) return;
  if (due_) timer_->cancel(due_);
  due_.reset();
  due_at_ = due;
  if (!due) return;
  // Measured on the timer's own clock: it runs the task no sooner than `due` on that clock.
  const std::chrono::nanoseconds wait = *due - timer_->clock_now();
  due_ = timer_->new_timeout(
      [this] {
        due_.reset();
        due_at_.reset();
        advance_clock();
      },
      wait.count() > 0 ? wait : std::chrono::nanoseconds(0));
}

void QueueBackend::shutdown(std::function<void()> done) {
  queue_.set_draining(true);
  done();
  cancel_timeouts();
}

void QueueBackend::detach() {
  cancel_timeouts();
}

void QueueBackend::cancel_timeouts() {
  if (timer_ == nullptr) return;
  // The timer outlives the backend's use of it: nothing of ours may stay on it.
  for (net::LoopTimer::Handle* h : {&due_, &poll_}) {
    if (*h) timer_->cancel(*h);
    h->reset();
  }
  timer_ = nullptr;
}

}  // namespace wheel::jobs
