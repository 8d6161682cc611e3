// SPDX-License-Identifier: Apache-2.0
#include "wheel/jobs/server/beanstalk_server_handler.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <csignal>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "wheel/jobs/beanstalk/beanstalk_protocol.h"
#include "wheel/jobs/beanstalk/beanstalk_reply.h"
#include "wheel/jobs/server/drain_signal.h"
#include "wheel/logger.h"

namespace wheel::jobs {

struct BeanstalkServerHandler::Client {
  Client(std::uint64_t conn, SessionId s, std::uint32_t max_job_size)
      : connection(conn), session(s), parser(max_job_size) {}
  std::uint64_t connection;
  SessionId session;
  beanstalk::RequestParser parser;
  std::string out;   // replies of the current read, not yet sent
  std::string held;  // input not run yet: a reserve or a change waits, or the output is over
                     // its bound
  // A change held while the journal says changes wait (its disk is behind); run first when
  // they may go on.
  std::optional<beanstalk::Request> parked;
  std::size_t unsent_bytes = 0;  // bytes of the replies waiting for the journal
  bool waiting = false;
  bool blocked = false;  // output over max_queued_output: input paused until it drains
  bool quit = false;
  bool input_ended = false;  // EOF: close once the replies owed are sent
  std::uint32_t unsent = 0;  // batches of replies waiting for the journal
};

BeanstalkServerHandler::BeanstalkServerHandler(JobQueue& queue, JobJournal& journal,
                                               BeanstalkDispatcher& dispatcher,
                                               BeanstalkServerOptions options)
    : housekeeping_(journal.housekeeping()),
      queue_(queue),
      journal_(journal),
      dispatcher_(dispatcher),
      options_(options) {
  if (options.max_job_size > beanstalk::kMaxMaxJobSize) {
    throw std::invalid_argument("BeanstalkServerOptions: max_job_size over " +
                                std::to_string(beanstalk::kMaxMaxJobSize));
  }
  if (options.max_held_input == 0) {
    throw std::invalid_argument("BeanstalkServerOptions: max_held_input must be at least 1");
  }
  if (options.max_queued_output < 2) {
    throw std::invalid_argument("BeanstalkServerOptions: max_queued_output must be at least 2");
  }
  queue_.set_listener(this);
  // The queue's clock is clock_ms(), truncated to the millisecond: up to 1 ms behind.
  queue_.set_clock_granularity(Millis(1));
}

BeanstalkServerHandler::~BeanstalkServerHandler() {
  queue_.set_listener(nullptr);
  for (auto& [session, client] : clients_) delete client;
  if (wake_ != nullptr) {
    // Kept open through the shutdown (replies made durable meanwhile are still sent); once
    // set_wakeup() returns the journal's thread no longer touches it.
    housekeeping_->set_wakeup({});
    uv_close(reinterpret_cast<uv_handle_t*>(wake_),
             [](uv_handle_t* h) { delete reinterpret_cast<uv_async_t*>(h); });
  }
  if (timer_ != nullptr) {  // no shutdown: a given timer must not run our timeouts later
    if (due_) timer_->cancel(due_);
    if (poll_) timer_->cancel(poll_);
  }
}

void BeanstalkServerHandler::attach(net::TcpServer& server, net::LoopTimer* timer) {
  server_ = &server;
  if (timer == nullptr) {
    TimerOptions tick;
    tick.tick_duration = std::chrono::milliseconds(1);  // the queue's deadlines are in ms
    own_timer_ = std::make_unique<net::LoopTimer>(server.loop(), tick);
    timer = own_timer_.get();
  }
  timer_ = timer;
  drain_ = watch_drain_signal<[](void* self) {
    logger()->info("beanstalk server: SIGUSR1: drain mode, puts are refused with DRAINING");
    static_cast<BeanstalkServerHandler*>(self)->queue_.set_draining(true);
  }>(server.loop(), this);
  advance_clock();
  if (housekeeping_ == nullptr) return;
  wake_ = new uv_async_t;
  uv_async_init(server.loop(), wake_,
                [](uv_async_t* a) { static_cast<BeanstalkServerHandler*>(a->data)->poll_log(); });
  wake_->data = this;
  uv_unref(reinterpret_cast<uv_handle_t*>(wake_));  // never keeps the loop running
  housekeeping_->set_wakeup([wake = wake_] { uv_async_send(wake); });
  poll_log();
}

namespace {

// The requests that record a change in the journal (the others never wait for its disk).
bool changes(const beanstalk::Request& r) {
  return std::holds_alternative<beanstalk::Put>(r) ||
         std::holds_alternative<beanstalk::Delete>(r) ||
         std::holds_alternative<beanstalk::Release>(r) ||
         std::holds_alternative<beanstalk::Bury>(r) || std::holds_alternative<beanstalk::Kick>(r) ||
         std::holds_alternative<beanstalk::KickJob>(r);
}

}  // namespace

void BeanstalkServerHandler::resume_parked() {
  // Taken out first: running a client's requests may park it again (and the journal decides
  // afresh before each change).
  std::vector<SessionId> parked;
  parked.swap(parked_);
  for (std::size_t i = 0; i < parked.size(); ++i) {
    auto it = clients_.find(parked[i]);
    if (it == clients_.end() || !it->second->parked) continue;
    if (journal_.changes_wait()) {
      parked_.insert(parked_.end(), parked.begin() + static_cast<std::ptrdiff_t>(i), parked.end());
      return;
    }
    Client* client = it->second;
    beanstalk::Request request = std::move(*client->parked);
    client->parked.reset();
    std::string held = std::move(client->held);
    client->held.clear();
    const SessionId session = client->session;
    if (dispatch(client, std::move(request))) {
      run(client, held);
    } else {
      if ((client->waiting || client->parked) && !held.empty()) client->held = std::move(held);
      flush(client);
    }
    resume_reading(session);
  }
}

void BeanstalkServerHandler::resume_reading(SessionId session) {
  // Looked up again: running the requests may have closed the connection and freed the client.
  auto it = clients_.find(session);
  if (it == clients_.end() || it->second->parked || it->second->blocked) return;
  net::Connection* c = server_->find(it->second->connection);
  if (c != nullptr && !c->closing() && c->input_paused()) c->resume_input();
}

void BeanstalkServerHandler::poll_log() {
  if (housekeeping_ == nullptr || timer_ == nullptr) return;
  const auto now_ms = static_cast<std::uint64_t>(clock_ms().count());
  housekeeping_->poll(now_ms);  // may send replies now durable, which may run held requests
  if (!parked_.empty()) resume_parked();
  arm_poll(now_ms);
  arm_timer();
}

void BeanstalkServerHandler::arm_poll(std::uint64_t now_ms) {
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

Millis BeanstalkServerHandler::clock_ms() const {
  // Read afresh, not uv_now(): the loop reads its time once per turn, and a callback of the
  // turn that waited (a sync of the id lease file, a large reply) would leave it behind by that
  // much, and deadlines started then would end early by it. The timer's clock is the steady
  // clock at full resolution (the loop's may be its coarse variant, up to a tick behind).
  return std::chrono::duration_cast<Millis>(timer_->clock_now());
}

void BeanstalkServerHandler::advance_clock() {
  if (timer_ == nullptr) return;
  queue_.advance(clock_ms());
  arm_timer();
}

void BeanstalkServerHandler::run_outside(const std::function<void()>& change) {
  if (timer_ != nullptr) queue_.advance(clock_ms());
  change();
  arm_timer();
  poll_log();
}

void BeanstalkServerHandler::arm_timer() {
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

void BeanstalkServerHandler::on_open(net::Connection& c) {
  SessionId session = queue_.open_session();
  auto* client = new Client(c.id(), session, options_.max_job_size);
  clients_.emplace(session, client);
  c.set_context(client);
}

void BeanstalkServerHandler::on_data(net::Connection& c, std::string_view bytes) {
  auto* client = static_cast<Client*>(c.context());
  if (client == nullptr || client->quit) return;
  if (timer_ != nullptr) queue_.advance(clock_ms());
  if (!client->waiting && (client->parked || client->blocked)) {
    // A change waits for the disk, or the output is over its bound: the client is not read
    // until it may go on (at most this read is held beyond what was held).
    client->held.append(bytes);
    c.pause_input();
    return;
  }
  if (client->waiting) {
    if (client->held.size() + bytes.size() > options_.max_held_input) {
      logger()->warn("beanstalk server: {} sent over {} bytes while its reserve waits; closing",
                     c.peer(), options_.max_held_input);
      c.close();
      return;
    }
    client->held.append(bytes);
    return;
  }
  run(client, bytes);
  arm_timer();
  poll_log();
}

bool BeanstalkServerHandler::dispatch(Client* client, beanstalk::Request&& request) {
  if (changes(request) && journal_.changes_wait()) {
    client->parked = std::move(request);
    parked_.push_back(client->session);
    return false;
  }
  switch (dispatcher_.handle(client->session, std::move(request), client->out)) {
    case BeanstalkDispatcher::Next::kContinue:
      return true;
    case BeanstalkDispatcher::Next::kWaiting:
      client->waiting = true;
      return false;
    case BeanstalkDispatcher::Next::kClose:
      client->quit = true;
      return false;
  }
  return true;
}

std::size_t BeanstalkServerHandler::backlog(const Client* client, const net::Connection* c) {
  return client->out.size() + client->unsent_bytes + (c == nullptr ? 0 : c->queued_output());
}

void BeanstalkServerHandler::run(Client* client, std::string_view bytes) {
  net::Connection* c = server_ == nullptr ? nullptr : server_->find(client->connection);
  while (!bytes.empty() && !client->waiting && !client->quit && !client->parked) {
    // Replies are built before the kernel takes them: past the bound, the rest of the input
    // waits (and the socket is not read) until the client has taken most of them.
    if (c != nullptr && backlog(client, c) >= options_.max_queued_output) {
      client->blocked = true;
      c->pause_input();
      break;
    }
    beanstalk::RequestParser::Step step;
    try {
      step = client->parser.feed(bytes);
    } catch (const std::bad_alloc&) {
      client->parser.reset();
      beanstalk::append_reply(client->out, beanstalk::Reply::kOutOfMemory);
      break;
    }
    bytes.remove_prefix(step.consumed);
    if (!step.request) continue;
    // Each request on the present: those before it in this read took their time.
    if (timer_ != nullptr) queue_.advance(clock_ms());
    dispatch(client, std::move(*step.request));
  }
  if ((client->waiting || client->parked || client->blocked) && !bytes.empty()) {
    client->held.append(bytes);
  }
  const bool blocked = client->blocked;
  const std::uint64_t conn = client->connection;
  flush(client);  // may close the connection (quit, a failed write), which frees `client`
  if (blocked && server_ != nullptr && server_->find(conn) != nullptr) watch_output(client);
}

void BeanstalkServerHandler::watch_output(Client* client) {
  net::Connection* c = server_->find(client->connection);
  const std::size_t low = options_.max_queued_output / 2;
  // Replies still with the journal: its callback looks again once they are sent.
  if (c == nullptr || client->unsent_bytes >= low) return;
  c->notify_output_below(low - client->unsent_bytes);
}

void BeanstalkServerHandler::on_output_below(net::Connection& c) {
  auto* client = static_cast<Client*>(c.context());
  if (client == nullptr || !client->blocked) return;
  if (backlog(client, &c) > options_.max_queued_output / 2) return watch_output(client);
  client->blocked = false;
  std::string held = std::move(client->held);
  client->held.clear();
  if (timer_ != nullptr) queue_.advance(clock_ms());
  run(client, held);
  if (c.closing()) return;  // closed meanwhile (quit, a failed write): `client` is gone
  if (!client->blocked) c.resume_input();
  arm_timer();
  poll_log();
}

void BeanstalkServerHandler::flush(Client* client) {
  if (client->out.empty() && !client->quit) return;
  std::uint64_t id = client->connection;
  bool quit = client->quit;
  std::string out = std::move(client->out);
  client->out.clear();
  // Sent when the changes behind these replies are durable; the connection may be gone then.
  // Reads with no earlier reply of this client waiting answer at once, even while other
  // clients' changes wait for a slow disk.
  client->unsent_bytes += out.size();
  auto send = [this, id, quit, out = std::move(out)] {
    net::Connection* c = server_->find(id);
    if (c == nullptr) return;
    if (journal_.calling_back_lost()) {
      // These changes never became durable (the log stopped): no acknowledgement, the client
      // sees the connection close instead.
      c->close();
      return;
    }
    auto* owner = static_cast<Client*>(c->context());
    if (!out.empty()) c->send(out);
    if (owner == nullptr || server_->find(id) == nullptr) return;  // the write closed it
    owner->unsent--;
    owner->unsent_bytes -= out.size();
    if (quit || (owner->input_ended && owner->unsent == 0)) return c->close();
    // Resumed from on_output_below (next turn), never from inside the journal's call.
    if (owner->blocked) watch_output(owner);
  };
  if (client->unsent++ == 0) {
    journal_.when_durable_or_now(std::move(send));
  } else {
    journal_.when_durable(std::move(send));
  }
}

void BeanstalkServerHandler::on_reserve_done(SessionId session, const ReserveResult& result) {
  auto it = clients_.find(session);
  if (it == clients_.end()) return;
  Client* client = it->second;
  client->waiting = false;
  dispatcher_.append_reserve_end(session, result, client->out);
  std::string held = std::move(client->held);
  client->held.clear();
  run(client, held);
  arm_timer();
}

void BeanstalkServerHandler::on_input_end(net::Connection& c) {
  // The client sends no more. Replies waiting for the journal are still sent, then the
  // connection closes; a waiting reserve is not waited for: beanstalkd closes a client that
  // hangs up while it waits, and releases its jobs.
  auto* client = static_cast<Client*>(c.context());
  if (client == nullptr || (client->unsent == 0 && !client->parked)) {
    c.close();
    return;
  }
  client->input_ended = true;  // a parked change still runs, and is answered
}

void BeanstalkServerHandler::on_close(net::Connection& c, net::CloseReason) {
  auto* client = static_cast<Client*>(c.context());
  if (client == nullptr) return;
  c.set_context(nullptr);
  clients_.erase(client->session);
  SessionId session = client->session;
  delete client;
  queue_.close_session(session);  // releases its reserved jobs, may serve other waiters
  arm_timer();
}

void BeanstalkServerHandler::on_shutdown() {
  queue_.set_draining(true);
  if (shutdown_also_) shutdown_also_();
  if (timer_ != nullptr) {
    // A given timer outlives the handler: nothing of ours may stay on it.
    for (net::LoopTimer::Handle* h : {&due_, &poll_}) {
      if (*h) timer_->cancel(*h);
      h->reset();
    }
    if (own_timer_) own_timer_->close();
    timer_ = nullptr;
  }
  if (drain_ != nullptr) {
    uv_close(reinterpret_cast<uv_handle_t*>(drain_),
             [](uv_handle_t* h) { delete reinterpret_cast<uv_signal_t*>(h); });
    drain_ = nullptr;
  }
}

}  // namespace wheel::jobs
