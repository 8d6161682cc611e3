// SPDX-License-Identifier: Apache-2.0
// RedisJobsHandler: beanstalkd's protocol on a wheel::net::TcpServer, every job kept in Redis
// through a RedisStore, so that any number of processes serve the same tubes.
//
// Per connection: one RequestParser, the tube used, the tubes watched, and the leases (id ->
// fencing token) of the jobs this connection reserved, so delete/release/bury/touch carry the
// token and a lease that ran out and went to another client answers NOT_FOUND.
//
// Pipelining. A connection's consecutive `put` and `delete` requests go to the store together,
// at most kMaxPipelined in flight (so that the store's group commit sees a pipelining client's
// whole window, not one request per round trip), and their replies are written strictly in
// request order (a reply that comes back early waits for the ones before it). Any other request
// is a barrier: it runs once every request before it answered, and the next one is parsed once
// its own reply came back. One exception saves a worker a round trip per job: a reserve behind
// pipelined deletes (no put) runs with them, its reply after theirs. The store never sends a claim
// before the deletes queued ahead of it, so Redis still runs those deletes first (a job whose
// lease ran out meanwhile is deleted, not claimed again). A delete's fencing token is the
// connection's lease when the delete is parsed. Input that arrives while requests are with Redis is
// held, at most max_held_input bytes; beyond that the connection is closed. Pipelined puts stop
// at max_in_flight_bytes of bodies with Redis, too. Once the replies the kernel has not taken
// reach max_queued_output, the connection's further requests wait and its socket is not read
// until it took all but half: one connection holds at most that plus one reply, however it
// pipelines (a client that never reads just sits there). A reply is sent only
// after Redis acknowledged the change. When Redis is down or slow, the reply is INTERNAL_ERROR at
// once (the RedisClient fails fast and times out), each in its request's order. A connection that
// closes with requests in flight loses their replies; their changes happen or not as Redis ran
// them. A shutdown (SIGTERM) is a graceful leave: the jobs the clients hold go back to ready at
// once (one script per 1,000, guarded by their fencing tokens), then on_shutdown_also runs.
//
// Waiting reserves. A reserve that finds nothing waits: the process keeps, on a
// net::LoopTimer (its own, or one given to attach()), the moment its tubes' next job comes due
// (from the script's reply, from the events other processes publish on every put/release/kick, and
// from a scan that also promotes what every process missed), and runs the claim script then:
// millisecond precision without polling Redis. The scan sleeps until the fleet's first timer (when
// reserves wait here), at most max_scan_interval: a job no event announced is found within that
// bound. When a connection closes, its leases are released at once (as beanstalkd does); a process
// that dies leaves them to run out.
//
// Threads: loop thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "wheel/jobs/beanstalk/beanstalk_reply.h"
#include "wheel/jobs/beanstalk/beanstalk_stats.h"
#include "wheel/jobs/fleet/redis_store.h"
#include "wheel/jobs/model/queue_metrics.h"
#include "wheel/jobs/server/beanstalk_dispatcher.h"
#include "wheel/jobs/server/internal_errors.h"
#include "wheel/net/connection_handler.h"
#include "wheel/net/loop_timer.h"
#include "wheel/net/tcp_server.h"
#include "wheel/reason_log.h"
#include "wheel/redis/redis_client.h"

namespace wheel::jobs {

class RedisTubeOrder;

struct RedisHandlerClient;  // internal (redis_handler_client.h)
struct RedisTubeWaiters;

struct RedisJobsOptions {
  std::uint32_t max_job_size = 65'535;
  // The safety-net scan: promotes what is due and looks for work of waiting reserves. It runs
  // when the fleet's first timer comes due while this process has waiting reserves, at once
  // after the event subscription (re)connects, and at the latest max_scan_interval after the
  // previous scan; never sooner than min_scan_interval after it.
  std::chrono::milliseconds min_scan_interval{1000};   // REQUIRES > 0
  std::chrono::milliseconds max_scan_interval{60000};  // REQUIRES >= min_scan_interval
  // Bytes a connection may send while its previous request is with Redis (plus one job body).
  std::size_t max_held_input = std::size_t{1} << 20;
  // Replies a connection may have queued before its further requests wait (until half).
  // REQUIRES >= 2.
  std::size_t max_queued_output = std::size_t{1} << 20;
  // Bytes of put bodies one connection may have with Redis at once (one put always goes).
  // REQUIRES >= 1.
  std::size_t max_in_flight_bytes = std::size_t{1} << 20;
  ServerInfo info;  // what `stats` says about this process
};

// Pipelined puts/deletes one connection may have in flight. 128: a pipelining producer (the
// fleet benchmark keeps 100 in flight per connection) fills a script with two connections (a
// script carries at most kMaxBatchPerScript = 256), while a hostile client holds at most 128 job
// bodies in the store's queues beyond its max_held_input.
inline constexpr std::size_t kMaxPipelined = 128;

struct RedisJobsCounters {
  std::uint64_t connections = 0, total_connections = 0, waiting = 0;
  std::uint64_t scans = 0, events = 0, attempts = 0, released_on_close = 0;
  std::uint64_t given_back = 0;  // jobs made ready again by the graceful leave (SIGTERM)
};

class RedisJobsHandler final : public net::ConnectionHandler {
 public:
  // `store` (its client) and `events` (a second client, for SUBSCRIBE) must outlive the handler.
  // Throws std::invalid_argument for scan intervals, max_queued_output or max_in_flight_bytes out
  // of their ranges.
  RedisJobsHandler(RedisStore& store, RedisClient& events, RedisJobsOptions options);
  ~RedisJobsHandler() override;
  RedisJobsHandler(const RedisJobsHandler&) = delete;
  RedisJobsHandler& operator=(const RedisJobsHandler&) = delete;

  // Binds to `server` (for find()), starts the scan and the subscription; SIGUSR1 turns drain
  // mode on (puts answer DRAINING). The waiters' timeouts and the scan run on `timer` (on the
  // server's loop, outliving the handler; its clock_now() is this node's clock), or, when null,
  // on a LoopTimer of the handler's own (1 ms tick) closed at shutdown. Call after listen(),
  // before the loop runs.
  void attach(net::TcpServer& server, net::LoopTimer* timer = nullptr);
  // Runs `also` when a shutdown has given back the held jobs and no Redis command is in flight
  // (close the loop's other handles there: the Redis clients, a metrics endpoint).
  void on_shutdown_also(std::function<void()> also) { shutdown_also_ = std::move(also); }

  void on_open(net::Connection& c) override;
  void on_data(net::Connection& c, std::string_view bytes) override;
  void on_input_end(net::Connection& c) override;
  void on_close(net::Connection& c, net::CloseReason reason) override;
  void on_shutdown() override;
  // A connection whose replies were over max_queued_output is down to half: it reads again.
  void on_output_below(net::Connection& c) override;

  const beanstalk::CommandCounts& commands() const { return commands_; }
  // Job changes this node made, by kind (put, reserve, release, bury, kick, delete, touch,
  // hang_up: a closed client's or a leaving node's job given back), and the delivery lateness
  // of the delayed jobs its clients reserved. Delay ends and timeouts happen inside Redis's
  // scripts, on no node in particular: not counted here (stats counts timeouts fleet-wide).
  const QueueMetrics& metrics() const { return metrics_; }
  RedisJobsCounters counters() const;
  // Requests answered INTERNAL_ERROR, by cause (a Redis error reply's own cause: the store
  // client's RedisClientMetrics::errors).
  std::uint64_t internal_errors(InternalErrorCause cause) const {
    return internal_errors_.count(static_cast<std::size_t>(cause));
  }

  using Client = RedisHandlerClient;

 private:
  void pump(Client* client);
  // Bytes of `client`'s replies not taken by the kernel yet (gathered, queued).
  std::size_t backlog(Client* client);
  // redis_dispatch.cc: runs `request`; a reply it can give at once goes to `out`, a later one
  // through finish().
  void dispatch(Client* client, beanstalk::Request&& request, std::string& out);
  void finish(std::uint64_t conn, std::string reply);  // a barrier request's reply
  // redis_pipeline.cc: whether `request` is pipelined (put, delete); runs it in a new reply slot.
  static bool pipelined(const beanstalk::Request& request);
  void dispatch_pipelined(Client* client, beanstalk::Request&& request);
  // Whether `request` may run while the connection's pipelined requests are in flight: a
  // reserve behind deletes only.
  static bool overlaps(const Client* client, const beanstalk::Request& request);
  // Runs such a request now, its reply in a slot of its own after theirs (finish() fills it).
  void dispatch_in_slot(Client* client, beanstalk::Request&& request);
  // Fills slot `seq` of `conn` (if still open) and writes the replies now in order.
  void complete(std::uint64_t conn, std::uint64_t seq, std::string reply);
  // Sends `reply` after every pipelined reply still due (at once when none is).
  void reply_in_order(Client* client, std::string& out, std::string_view reply);
  Client* find(std::uint64_t conn);
  // The reply of a failed store call: NOT_FOUND, OUT_OF_MEMORY or INTERNAL_ERROR; an
  // INTERNAL_ERROR is counted and logged by its cause (note_internal_error).
  std::string store_failure_reply(const StoreResult& r);
  // Counts an INTERNAL_ERROR answer for `r`'s error and logs it (rate-limited), unless it is a
  // Redis error reply, which the store's client has logged with Redis's message.
  void note_internal_error(const StoreResult& r);
  // Whether the client is still there: a failed write closes its connection (and frees it) at once.
  // While the store's client delivers one read's replies, the bytes are gathered instead and
  // written by write_gathered() after it (a worker's DELETED and next RESERVED in one write).
  bool send(Client* client, std::string_view bytes);
  void write_gathered();  // every client's gathered bytes (RedisClient::set_after_read)
  bool write_gathered(Client* client);  // this one's now; whether it is still there
  void maybe_close(Client* client);
  void reserve(Client* client, std::optional<std::chrono::milliseconds> timeout, std::string& out);
  void stats(Client* client);
  // A timeout at local ms `at`, or `delay` from now (never before either), on the timer; an
  // empty handle once the shutdown began.
  net::LoopTimer::Handle at_local(std::int64_t at, std::function<void()> task);
  net::LoopTimer::Handle after(Millis delay, std::function<void()> task);
  void cancel(net::LoopTimer::Handle& handle);
  void cancel_timeouts();  // every timeout of this handler's (a given timer outlives it)
  void scan();
  void schedule_scan(std::int64_t after_ms);
  void on_event(std::string_view message);
  std::int64_t local_ms() const;
  std::int64_t to_local(std::int64_t redis_ms) const;
  void learn_clock(std::int64_t redis_now);

  // waiting reserves (redis_waiters.cc)
  void start_wait(Client* client, std::optional<std::chrono::milliseconds> timeout);
  void end_wait(Client* client);
  void end_wait(Client* client, beanstalk::Reply reply);  // and answers the reserve with it
  // A waiting reserve's timer fired: unless the wait `seq` of `conn` is over, the client's
  // `flag` (timed_out or deadline_soon) is set and the wait ends with `reply`, now or, while a
  // claim is in flight, when the claim returns.
  void wait_timer_fired(std::uint64_t conn, std::uint64_t seq, bool Client::*flag,
                        beanstalk::Reply reply);
  using Waiter = std::pair<std::uint64_t, std::uint64_t>;  // (conn, wait_seq)
  // Runs the claim script for client; then, one at a time, for the waiters of chain.
  void attempt(Client* client, std::deque<Waiter> chain = {});
  void claimed(std::uint64_t conn, std::uint64_t seq, ClaimResult&& r);
  void run_chain(std::deque<Waiter> chain);
  // After a claim over `tubes` learnt when their next job comes due (-1: none pending): the
  // waiters of chain on the same tubes wait for it; the others run their own claims in turn.
  void defer_chain(std::deque<Waiter> chain, const std::vector<std::string>& tubes,
                   std::int64_t next_due);
  void fire_retry(std::int64_t at);
  void wake(const std::string& tube, std::uint64_t count);
  void schedule_tube(const std::string& tube, std::int64_t redis_due);
  // At local ms `at` (or sooner if already set sooner), one waiter of `tube` runs a claim.
  void wake_tube_at(const std::string& tube, std::int64_t at);
  // Whether every one of `tubes` is known to have no ready job (TubeWaiters::empty_until).
  bool known_empty(const std::vector<std::string>& tubes) const;
  // A claim over `tube` alone left it with no ready job; its next is due at redis_next_due.
  void learn_empty(const std::string& tube, std::int64_t redis_next_due);
  void forget_empty(const std::string& tube);
  void schedule_retry(Client* client, std::int64_t redis_due);
  void deadline_check(Client* client);
  void leave();           // SIGTERM: gives back the held jobs, then stop_when_idle()
  void stop_when_idle();  // runs shutdown_also once no Redis command is in flight

  RedisStore& store_;
  RedisClient& events_;
  RedisJobsOptions options_;
  net::TcpServer* server_ = nullptr;
  net::LoopTimer* timer_ = nullptr;  // null before attach() and after the shutdown began
  std::unique_ptr<net::LoopTimer> own_timer_;
  net::LoopTimer::Handle scan_timer_;
  uv_signal_t* drain_ = nullptr;
  bool draining_ = false;
  bool stopping_ = false;
  bool scan_in_flight_ = false;
  std::int64_t clock_offset_ = 0;  // Redis ms - local ms, from the latest reply
  bool clock_known_ = false;
  std::unordered_map<std::uint64_t, std::unique_ptr<Client>> clients_;
  // The tubes this node's clients use or watch, in the order first named (list-tubes).
  std::unique_ptr<RedisTubeOrder> tube_order_;
  std::vector<std::uint64_t> gathered_;  // clients with gathered bytes (send())
  using TubeWaiters = RedisTubeWaiters;
  std::unordered_map<std::string, TubeWaiters> waiters_;  // tube -> clients waiting on it
  // Waiters told by their script when the next job comes due, by that local ms: one timer
  // and one claim at a time per due time, not one per waiter (members are lazy).
  struct RetryGroup {
    net::LoopTimer::Handle timer;
    std::vector<Waiter> members;
  };
  std::unordered_map<std::int64_t, RetryGroup> retry_groups_;
  beanstalk::CommandCounts commands_;
  QueueMetrics metrics_;
  RedisJobsCounters counters_;
  std::uint64_t next_wait_seq_ = 1;
  std::int64_t started_ms_ = 0;
  std::function<void()> shutdown_also_;
  ReasonLog internal_errors_{std::string(kInternalErrorLogPrefix), kInternalErrorCauseNames};
};

}  // namespace wheel::jobs
