// SPDX-License-Identifier: Apache-2.0
// RedisBackend: the Redis store behind the beanstalkd front end (BeanstalkFront), every job kept
// in Redis through a RedisStore, so that any number of processes serve the same tubes.
// RedisJobsHandler (redis_jobs_handler.h) is the front over it.
//
// Per connection: the leases (id -> fencing token) of the jobs this connection reserved (its
// tubes are the front's SessionTubes, read where a put, a peek, a kick or a reserve needs them), so
// delete/release/bury/touch carry the token and a lease that ran out and went to another client
// answers NOT_FOUND.
//
// Pipelining. A connection's consecutive `put` and `delete` requests go to the store together
// (admitted at once, Flow::kGoOn), at most kMaxPipelined in flight and max_in_flight_bytes of put
// bodies (the front's in-flight bounds), so that the store's group commit sees a pipelining
// client's whole window, not one request per round trip. Any other request is a barrier: it
// starts once every request before it answered (Admit::kAfterEarlier), and the next one starts
// once its own reply came back. One exception saves a worker a round trip per job: a reserve
// behind pipelined deletes (no put) starts with them, its reply after theirs. The store never
// sends a claim before the deletes queued ahead of it, so Redis still runs those deletes first (a
// job whose lease ran out meanwhile is deleted, not claimed again). A delete's fencing token is the
// connection's lease when the delete starts. A reply completes only after Redis acknowledged the
// change. When Redis is down or slow, the reply is INTERNAL_ERROR at once (the RedisClient fails
// fast and times out). A connection that closes with requests in flight loses their replies;
// their changes happen or not as Redis ran them. A shutdown (SIGTERM) is a graceful leave: the
// jobs the clients hold go back to ready at once (one script per 1,000, guarded by their fencing
// tokens), then the front's shutdown_also runs.
//
// Waiting reserves. A reserve that finds nothing waits (Flow::kWaits): the process keeps, on the
// front's net::LoopTimer, the moment its tubes' next job comes due (from the script's reply, from
// the events other processes publish on every put/release/kick, and from a scan that also
// promotes what every process missed), and runs the claim script then: millisecond precision
// without polling Redis. The scan sleeps until the fleet's first timer (when reserves wait here),
// at most max_scan_interval: a job no event announced is found within that bound. When a
// connection closes, its leases are released at once (as beanstalkd does); a process that dies
// leaves them to run out.
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
#include "wheel/jobs/server/beanstalk_backend.h"
#include "wheel/jobs/server/beanstalk_dispatcher.h"
#include "wheel/jobs/server/internal_errors.h"
#include "wheel/net/loop_timer.h"
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

class RedisBackend final : public BeanstalkBackend {
 public:
  // `store` (its client) and `events` (a second client, for SUBSCRIBE) must outlive the
  // backend. Throws std::invalid_argument for scan intervals, max_queued_output or
  // max_in_flight_bytes out of their ranges.
  RedisBackend(RedisStore& store, RedisClient& events, RedisJobsOptions options);
  ~RedisBackend() override;
  RedisBackend(const RedisBackend&) = delete;
  RedisBackend& operator=(const RedisBackend&) = delete;

  // BeanstalkBackend: a request is pipelined (put, delete), a reserve behind deletes, or a
  // barrier (see above).
  Admit admit(std::uint64_t conn, const beanstalk::Request& request,
              std::size_t in_flight) override;
  Flow run(std::uint64_t conn, beanstalk::Request&& request, ReplySlot slot) override;
  // Starts the scan and the subscription.
  void attach(BeanstalkFront& front, net::LoopTimer& timer) override;
  void open(std::uint64_t conn, const SessionTubes& tubes) override;
  // Releases the connection's leases at once (as beanstalkd) and ends its waiting reserve.
  void close(std::uint64_t conn) override;
  // Keeps list-tubes' order of the tubes this node's clients name (never refuses: the store
  // bounds no tube count).
  bool change_tubes(std::uint64_t conn, TubeChange change, std::string_view tube) override;
  beanstalk::CommandCounts& command_counts() override { return commands_; }
  InFlightLimits in_flight_limits() const override {
    return {kMaxPipelined, options_.max_in_flight_bytes};
  }
  bool gathering() const override;
  void set_draining() override { draining_ = true; }
  // A graceful leave: gives back the held jobs, then `done` once no Redis command is in flight.
  void shutdown(std::function<void()> done) override;
  void detach() override;

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
  const RedisJobsOptions& options() const { return options_; }

  using Client = RedisHandlerClient;

 private:
  // redis_dispatch.cc: runs `request`; a reply it can give at once goes to `out`, a later one
  // through finish().
  void dispatch(Client* client, beanstalk::Request&& request, std::string& out);
  void finish(std::uint64_t conn, std::string reply);  // a barrier request's reply
  // redis_pipeline.cc: whether `request` is pipelined (put, delete); runs it, its reply
  // through `slot`.
  static bool pipelined(const beanstalk::Request& request);
  void dispatch_pipelined(Client* client, beanstalk::Request&& request, ReplySlot slot);
  // Whether `request` may run while the connection's pipelined requests are in flight: a
  // reserve behind deletes only.
  static bool overlaps(const Client* client, const beanstalk::Request& request);
  Client* find(std::uint64_t conn);
  // The reply of a failed store call: NOT_FOUND, OUT_OF_MEMORY or INTERNAL_ERROR; an
  // INTERNAL_ERROR is counted and logged by its cause (note_internal_error).
  std::string store_failure_reply(const StoreResult& r);
  // Counts an INTERNAL_ERROR answer for `r`'s error and logs it (rate-limited), unless it is a
  // Redis error reply, which the store's client has logged with Redis's message.
  void note_internal_error(const StoreResult& r);
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
  BeanstalkFront* front_ = nullptr;
  net::LoopTimer* timer_ = nullptr;  // null before attach() and after the shutdown began
  net::LoopTimer::Handle scan_timer_;
  bool draining_ = false;
  bool stopping_ = false;
  bool scan_in_flight_ = false;
  std::int64_t clock_offset_ = 0;  // Redis ms - local ms, from the latest reply
  bool clock_known_ = false;
  std::unordered_map<std::uint64_t, std::unique_ptr<Client>> clients_;
  // The tubes this node's clients use or watch, in the order first named (list-tubes).
  std::unique_ptr<RedisTubeOrder> tube_order_;
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
