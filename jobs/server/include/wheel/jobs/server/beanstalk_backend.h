// SPDX-License-Identifier: Apache-2.0
// BeanstalkBackend: what runs beanstalkd's requests behind the one connection front
// (BeanstalkFront). Two implement it: the in-process JobQueue, memory only or on the log
// (QueueBackend, jobs/server), and the Redis store (RedisBackend, jobs/fleet).
//
// The front owns the connections: parsing, input held while requests may not run, one reply
// slot per request written strictly in request order, the output bound (max_queued_output),
// the held-input bound, quit and hang-up, SIGUSR1's drain mode, the net::LoopTimer both run
// their timeouts on, and each session's tubes (SessionTubes: use, watch, ignore,
// list-tube-used and list-tubes-watched with beanstalkd's rules; a backend never sees those
// requests). A backend owns what a request does and the state behind it (the jobs, the
// session's reserved jobs, its waiting reserve and TTR deadlines), reads the session's tubes
// from the front (open()'s SessionTubes) and hears each change before it is made
// (change_tubes: a tube kept alive while used or watched, per-tube counts), and decides two
// things per request: whether it may start now (admit) and whether the connection's next
// request may start before it completes (run's Flow).
//
// A reply completes through the ReplySlot run() was given: at once (inside run()), at the end
// of the batch (end_batch: the log's group commit), or later from the loop (a log sync, a
// Redis reply, the end of a waiting reserve), alone or several at once (complete_batch: the
// replies of one batch). Each slot completes exactly once; the front writes a reply once every
// slot before it is complete, so a connection's replies keep the order of its requests
// whatever order the backend completes them in.
//
// Waiting reserves and TTR deadlines: the in-process queue wakes its own waiters (its
// ReserveListener, on the queue's clock driven from the front's LoopTimer); the Redis
// backend's waiters are woken by the claim script's answer, the fleet's events and its scans,
// each on the same LoopTimer. Either way the reserve's slot completes when the wait ends.
//
// Threads: loop thread only (the front's TcpServer loop).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <string_view>

#include "wheel/jobs/beanstalk/beanstalk_request.h"
#include "wheel/jobs/beanstalk/beanstalk_stats.h"
#include "wheel/jobs/server/session_tubes.h"

namespace wheel::net {
class LoopTimer;
}  // namespace wheel::net

namespace wheel::jobs {

class BeanstalkFront;
struct SlotEnd;

// The ticket for one request's reply: slot `seq` of connection `conn` of a front. Copyable,
// owns nothing; a slot whose connection closed meanwhile is forgotten by complete().
class ReplySlot {
 public:
  ReplySlot() = default;
  // Fills the slot with `reply` (empty: the request answers nothing, e.g. quit) and writes the
  // replies now in order. Call exactly once per slot. Loop thread only.
  void complete(std::string_view reply) const;
  // Completes the slots of `batch` (of one connection, in the order their requests started)
  // with their replies one after another in `replies`, each ending at its `end`: the same as
  // complete() on each in turn, in one step (a batch of the connection's oldest slots goes to
  // the bytes to write at once). Loop thread only.
  static void complete_batch(std::span<const SlotEnd> batch, std::string_view replies);
  // The request must not be acknowledged (a change a stopped log will never make durable):
  // the connection closes instead of answering. Loop thread only.
  void abort() const;
  std::uint64_t conn() const { return conn_; }
  explicit operator bool() const { return front_ != nullptr; }

 private:
  friend class BeanstalkFront;
  ReplySlot(BeanstalkFront* front, std::uint64_t conn, std::uint64_t seq)
      : front_(front), conn_(conn), seq_(seq) {}
  BeanstalkFront* front_ = nullptr;
  std::uint64_t conn_ = 0;
  std::uint64_t seq_ = 0;
};

// A slot of a batch (ReplySlot::complete_batch) and where its reply ends in the batch's replies.
struct SlotEnd {
  ReplySlot slot;
  std::size_t end = 0;
};

// Whether a parsed request may start now (BeanstalkBackend::admit).
enum class Admit : std::uint8_t {
  kNow,           // start it, even with earlier requests of the connection in flight
  kAfterEarlier,  // start it once every earlier request of the connection completed
  // The backend cannot take it now (a log whose disk is behind): the front holds it and the
  // connection's further input (socket paused) until BeanstalkFront::resume(conn).
  kLater,
};

// What the front may do while a started request has not completed (BeanstalkBackend::run).
enum class Flow : std::uint8_t {
  kGoOn,     // the connection's next request may start (its reply goes out after this one's)
  kBarrier,  // nothing more of the connection starts until this one completes
  kWaits,    // a reserve that waits: as kBarrier, and a hang-up closes the connection at once
};

// Per-connection bounds on requests started and not completed, checked before each start.
struct InFlightLimits {
  std::size_t requests = std::numeric_limits<std::size_t>::max();
  std::size_t put_bytes = std::numeric_limits<std::size_t>::max();  // bodies of those puts
};

class BeanstalkBackend {
 public:
  virtual ~BeanstalkBackend() = default;

  // The front is bound to its server: completions and resume() go to `front`, timeouts on
  // `timer` (on the front's loop, outliving the backend's use of it until shutdown()).
  virtual void attach(BeanstalkFront& front, net::LoopTimer& timer) = 0;
  // A connection opened / closed. `tubes` are its session's tubes as the front keeps them
  // (using and watching "default" now), valid until close(conn) returns. close() releases what
  // the session held (its reserved jobs, its waiting reserve); slots of it still open are
  // forgotten by the front.
  virtual void open(std::uint64_t conn, const SessionTubes& tubes) = 0;
  virtual void close(std::uint64_t conn) = 0;
  // The session of `conn` is about to change its tubes (SessionTubes has applied beanstalkd's
  // rules; not called when nothing changes): `tube` becomes the used one, is watched too, or is
  // no longer watched. The SessionTubes still reads as before. Returns false when there is no
  // room for the tube (the request answers OUT_OF_MEMORY, nothing changes); kIgnore must be
  // taken.
  virtual bool change_tubes(std::uint64_t conn, TubeChange change, std::string_view tube) = 0;
  // The command counts of the stats reply: the front counts there the requests it answers
  // itself (the session's tubes).
  virtual beanstalk::CommandCounts& command_counts() = 0;

  // Whether `request` may start now; `in_flight`: the connection's started requests not
  // completed yet.
  virtual Admit admit(std::uint64_t conn, const beanstalk::Request& request,
                      std::size_t in_flight) = 0;
  // Starts `request`; its reply completes through `slot` (see above).
  virtual Flow run(std::uint64_t conn, beanstalk::Request&& request, ReplySlot slot) = 0;
  // The connection's batch ended (the input ran out or its requests stopped): a backend that
  // group-commits completes the batch's slots now or once they are durable.
  virtual void end_batch(std::uint64_t conn) { (void)conn; }
  // After the front ran requests: keep the backend's timeouts where they belong.
  virtual void after_batch() {}

  virtual InFlightLimits in_flight_limits() const { return {}; }
  // Bytes of the connection's replies built but not completed yet (a batch waiting for the
  // log's sync): they count toward the front's output bound.
  virtual std::size_t held_reply_bytes(std::uint64_t conn) const {
    (void)conn;
    return 0;
  }
  // True while the backend delivers replies that are written together after it (the Redis
  // client's read of a pipelined batch): the front gathers what completes meanwhile, and
  // writes it on BeanstalkFront::write_gathered().
  virtual bool gathering() const { return false; }

  // SIGUSR1: puts answer DRAINING from now on.
  virtual void set_draining() = 0;
  // The server shuts down: start nothing new, take every timeout off the timer now, and call
  // `done` (at once or later) once nothing the backend started is in flight.
  virtual void shutdown(std::function<void()> done) = 0;
  // The front goes away (with or without a shutdown): nothing of the backend's may stay on
  // its timer.
  virtual void detach() = 0;
};

}  // namespace wheel::jobs
