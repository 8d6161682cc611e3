// SPDX-License-Identifier: Apache-2.0
// JobQueue: beanstalkd 1.12's job model, in memory, single-threaded, driven by its owner.
//
// What it holds: jobs (64-bit ids from 1, never reused: restore() moves the counter past
// restored ids), tubes (tube.h) created on use/watch/put and dropped when unused and empty,
// and sessions (job_session.h), one per client connection. States and transitions are
// beanstalkd's (its protocol.txt):
//
//    put with delay --> [DELAYED] --(delay ends)--> [READY] <-- put
//    [READY] --reserve--> [RESERVED] --release--> [READY] or [DELAYED]; --delete--> gone
//    [RESERVED] --TTR runs out / session closes--> [READY];  --bury--> [BURIED] --kick--> [READY]
//    kick-job: BURIED or DELAYED --> READY;  delete: any state but reserved by another session
//
// reserve takes the ready job of lowest priority, then lowest id, across the session's watched
// tubes that are not paused. When there is none it blocks (reserve) or waits up to a timeout
// (reserve-with-timeout; 0: answer at once): waiters are served in the order they began to
// wait; a waiter that holds a reserved job entering its last second of TTR (the safety margin)
// gets DEADLINE_SOON, one whose timeout ends gets TIMED_OUT. A blocked reserve that ends later
// is reported through the ReserveListener, never from inside the call that began it.
//
// Time: the queue never reads a clock. Its owner passes `now` (milliseconds on any monotonic
// clock) to advance(), which runs every delay end, TTR expiry, pause end and reserve timeout
// due by then (one due at D runs at the first advance(now >= D), never before: exact to the
// millisecond), millisecond by millisecond in time order (within one millisecond in no
// particular order; a tube's delayed jobs due by then all become ready when its soonest one
// does); commands use the `now` of the last advance(). The deadlines are timeouts on a
// wheel::LoopWheel with a 1 ms tick, hierarchical layout (chosen by measurement:
// docs/jobs.md): O(1) to schedule and cancel, whatever the number of jobs; each tube has one
// for its soonest delayed job (its delayed heap orders the rest). next_due() says when
// to call advance() next, so the owner arms one timer for it (a libuv timer). Tests move time
// by hand.
//
// Durability: every durable change goes through the QueueJournal (queue_journal.h) before it is
// applied; a journal that refuses makes the command fail, state unchanged: kOutOfMemory when
// the journal has no room (a full disk), kInternalError for any other refusal.
//
// Bounds: JobQueueLimits; a command that would cross one is refused with kOutOfMemory.
//
// Threads: not thread-safe. One thread (the owner's loop thread) calls everything.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "wheel/jobs/model/job.h"
#include "wheel/jobs/model/job_queue_limits.h"
#include "wheel/jobs/model/job_session.h"
#include "wheel/jobs/model/job_stats.h"
#include "wheel/jobs/model/job_table.h"
#include "wheel/jobs/model/queue_journal.h"
#include "wheel/jobs/model/queue_metrics.h"
#include "wheel/jobs/model/state_counts.h"
#include "wheel/jobs/model/tube.h"

namespace wheel::jobs {

// How a command ended (the protocol reply it maps to in brackets).
enum class Outcome : std::uint8_t {
  kOk,             // the command's own success reply
  kNotFound,       // NOT_FOUND
  kOutOfMemory,    // OUT_OF_MEMORY: a JobQueueLimits bound, or the journal has no room
  kInternalError,  // INTERNAL_ERROR: the journal refused the change for another reason
  kDraining,       // DRAINING: put while draining
  kTimedOut,       // TIMED_OUT
  kDeadlineSoon,   // DEADLINE_SOON
  kWaiting,        // the reserve blocks; the ReserveListener hears how it ends
};

struct PutResult {
  Outcome outcome = Outcome::kOk;
  std::uint64_t id = 0;  // kOk
};
struct ReserveResult {
  Outcome outcome = Outcome::kOk;
  const Job* job = nullptr;  // kOk: valid until the queue's next mutating call
};

// Hears how blocked reserves end: kOk with the job, kTimedOut or kDeadlineSoon. Called from
// advance() or from the command that made a job available, after the queue finished its own
// work; the listener may call the queue again.
class ReserveListener {
 public:
  virtual ~ReserveListener() = default;
  virtual void on_reserve_done(SessionId session, const ReserveResult& result) = 0;
};

// The queue-wide counters of beanstalkd's stats (the command counts are the protocol's).
struct QueueCounters : StateCounts {
  std::uint64_t sessions = 0, producers = 0, workers = 0, waiting = 0, total_sessions = 0;
  std::uint64_t body_bytes = 0;
};

inline constexpr std::string_view kDefaultTube = "default";
// The TTR of a job put with TTR 0 (beanstalkd raises it to one second).
inline constexpr Millis kMinTtr{1000};
// The last second of a TTR: a waiting session holding a job that enters it gets DEADLINE_SOON.
inline constexpr Millis kSafetyMargin{1000};

// A JobQueue answers its journal as JournaledJobs (queue_journal.h); that face is private.
class JobQueue : private JournaledJobs {
 public:
  // An empty queue at time `now` with the tube "default". `journal` (may be null: memory only)
  // must outlive the queue. Throws std::invalid_argument for a zero limit or max_jobs over
  // 2^32. Attaches itself to `journal` (QueueJournal::attach) until destroyed.
  explicit JobQueue(JobQueueLimits limits = {}, QueueJournal* journal = nullptr,
                    Millis now = Millis{0});
  ~JobQueue();
  JobQueue(const JobQueue&) = delete;
  JobQueue& operator=(const JobQueue&) = delete;

  // The listener of blocked reserves (may be null: nobody hears them). Must outlive its use.
  void set_listener(ReserveListener* listener) { listener_ = listener; }

  // --- time ---
  // Moves the clock to `now` (never backwards: an earlier `now` is ignored) and runs everything
  // due by then, in time order.
  void advance(Millis now);
  Millis now() const { return now_; }
  // The owner's clock may be behind the true time by up to `granularity` (a clock read in whole
  // milliseconds, truncated: 1 ms). Every deadline a command starts (a delay, a TTR, a pause, a
  // reserve timeout) is then pushed out by it, so none ends before its time on the true clock:
  // up to `granularity` late instead of up to that early. 0 (the default): an exact clock, such
  // as a test's hand-moved one. Throws std::invalid_argument below 0.
  void set_clock_granularity(Millis granularity);
  // When advance() has work next: no later than the next delay end, TTR expiry, pause end or
  // reserve timeout (earlier when the wheel cascades: advance() then runs nothing, and
  // next_due() moves on); nullopt: none pending.
  std::optional<Millis> next_due() const;

  // --- sessions ---
  // A new session using and watching "default".
  SessionId open_session();
  // Ends a session: its blocked reserve is dropped (no callback), its reserved jobs go back to
  // ready, its tubes are unused/unwatched. Unknown ids are ignored.
  void close_session(SessionId session);
  // The session, or nullptr.
  const Session* session(SessionId session) const;

  // --- commands (REQUIRES: `session` open) ---
  // put: into the used tube; delay 0 = ready now; ttr 0 becomes kMinTtr. kDraining,
  // kOutOfMemory (limits, journal full), kInternalError (journal) or kOk with the new id.
  // Every command that changes a job (delete, release, bury, kick, kick-job) is refused the
  // same way when the journal refuses it.
  PutResult put(SessionId session, std::uint32_t priority, Millis delay, Millis ttr,
                std::string body);
  // The session's tubes, as its connection's front end decided them (beanstalkd's rules for
  // use, watch and ignore, the watch list's bound and its last tube, are the front's:
  // SessionTubes, jobs/server). A tube is kept while a session uses or watches it.
  // use: `tube` becomes the used tube: kOk, or kOutOfMemory when it would be one too many.
  Outcome use(SessionId session, std::string_view tube);
  // watch: the session watches `tube` too (nothing when it already does): kOk, or kOutOfMemory
  // when the tube would be one too many.
  Outcome watch(SessionId session, std::string_view tube);
  // ignore: the session no longer watches `tube` (nothing when it does not).
  // REQUIRES: another tube stays watched.
  void ignore(SessionId session, std::string_view tube);
  // reserve (timeout nullopt) or reserve-with-timeout: kOk with the job, kDeadlineSoon,
  // kTimedOut, or kWaiting (the listener hears the end).
  ReserveResult reserve(SessionId session, std::optional<Millis> timeout);
  // reserve-job: reserves `id` if it is ready, delayed or buried; kNotFound otherwise.
  ReserveResult reserve_job(SessionId session, std::uint64_t id);
  // delete: a job reserved by this session, or ready, delayed or buried. kNotFound otherwise.
  Outcome remove(SessionId session, std::uint64_t id);
  // release: a job reserved by this session, to ready (delay 0) or delayed, with `priority`.
  Outcome release(SessionId session, std::uint64_t id, std::uint32_t priority, Millis delay);
  // bury: a job reserved by this session, with `priority`.
  Outcome bury(SessionId session, std::uint64_t id, std::uint32_t priority);
  // touch: restarts the TTR of a job reserved by this session.
  Outcome touch(SessionId session, std::uint64_t id);
  // kick: up to `bound` jobs of the used tube to ready: buried ones if any, else delayed ones
  // (soonest first). Returns how many were kicked (a journal refusal stops early).
  std::uint64_t kick(SessionId session, std::uint64_t bound);
  // kick-job: a buried or delayed job to ready.
  Outcome kick_job(std::uint64_t id);
  // pause-tube: reserves do not take the tube's jobs for `delay` (0 ends a pause). kNotFound
  // for a tube that does not exist.
  Outcome pause_tube(std::string_view tube, Millis delay);

  // Gives a reserved job back to ready as if the reserve had not happened (not journalled;
  // its reserve count is taken back): for a server that could not send the job (its body
  // could not be read). kNotFound unless `session` holds `id`.
  Outcome unreserve(SessionId session, std::uint64_t id);

  // --- reads (nullptr/nullopt when absent; pointers valid until the next mutating call) ---
  // The body of `job`: a view of the queue's copy (memory only), or of `scratch`, into which
  // it was read back from the journal that keeps bodies. nullopt when it cannot be read (an
  // I/O error, a damaged record): the command answers INTERNAL_ERROR. The view is valid until
  // the next mutating call or the next use of `scratch`.
  std::optional<std::string_view> body(const Job& job, std::string& scratch) const;
  const Job* peek(std::uint64_t id) const;
  const Job* peek_ready(SessionId session) const;
  const Job* peek_delayed(SessionId session) const;
  const Job* peek_buried(SessionId session) const;
  std::optional<JobStats> job_stats(std::uint64_t id) const;  // views into the queue
  std::optional<TubeStats> tube_stats(std::string_view tube) const;
  QueueCounters counters() const;
  // The tubes in the order they were created (list-tubes), as beanstalkd lists them. (A tube
  // dropped and used again is new, so last. beanstalkd moves its last tube into a dropped one's
  // place; here the others keep their order.)
  std::vector<std::string_view> tube_names() const;
  const Tube* find_tube(std::string_view name) const;
  // The ready job of `tube` that has been ready longest (whatever its priority: not the one a
  // reserve takes next), or nullptr when it has none. Amortized O(1): drops marks of jobs that
  // left ready since (Tube::ready_marks). Loop thread only, like every call.
  const Job* oldest_ready(const Tube& tube) const;
  // Changes by kind, lateness and ready waits (queue_metrics.h).
  const QueueMetrics& metrics() const { return metrics_; }
  // Why the journal refused last (QueueJournal::last_refusal_reason): the reason of the latest
  // kInternalError (or kOutOfMemory from the journal). Empty without a journal.
  std::string refusal_reason() const {
    return journal_ != nullptr ? journal_->last_refusal_reason() : std::string();
  }
  // The `limit` tubes holding the most jobs (ties: by name), most first; for metrics whose
  // series per tube must stay bounded however many tubes exist. O(tubes * log(limit)).
  std::vector<const Tube*> tubes_by_jobs(std::size_t limit) const;

  // Drain mode: puts are refused with kDraining; everything else goes on.
  void set_draining(bool on) { draining_ = on; }
  bool draining() const { return draining_; }

  // --- replay (REQUIRES: no session open yet) ---
  // Adds a job read back from a log, with its id. Throws std::invalid_argument for an id already
  // present or 0, an invalid tube name, a reserved state, or a body shorter than body_size
  // without a journal that keeps bodies. Not journalled. Bypasses limits (except 2^32 jobs).
  // With a journal that keeps bodies only job.body_size is used (the body is read back from
  // the journal); else job.body is copied.
  void restore(const RestoredJob& job);
  // restore() in two halves, so that a restart can build jobs on one thread while the queue's
  // thread adds them (DurableJournal::restore_deferred). build_restored() checks `job` as restore()
  // does (throws the same) and makes the Job, its tube and place left to add_restored(); it
  // reads only what the constructor set (clock, journal): safe from any thread, also while
  // add_restored() runs. add_restored() adds a Job built by build_restored() in tube `tube`
  // (its name as checked there); throws std::invalid_argument for an id already present or
  // over 2^32 jobs. Loop thread only.
  std::unique_ptr<Job> build_restored(const RestoredJob& job) const;
  void add_restored(std::unique_ptr<Job> job, std::string_view tube);
  // Makes room for `n` jobs in the id table (a restart knows how many come).
  void reserve_jobs(std::size_t n) { jobs_.reserve(n); }
  // Ids below `next` are never handed out (a log remembers the highest id ever used).
  void reserve_ids_below(std::uint64_t next);
  std::uint64_t next_id() const { return next_id_; }

  const JobQueueLimits& limits() const { return limits_; }

 private:
  // JournaledJobs.
  const Job* journaled_job(std::uint64_t id) const override { return find_job(id); }
  void move_journal_ref(std::uint64_t id, std::uint64_t ref) override;
  Millis journal_now() const override { return now_; }

  // When a deadline `after` from now ends: never before `after` has passed on the true clock.
  Millis deadline_in(Millis after) const { return now_ + after + granularity_; }
  bool keeps_bodies() const { return journal_ != nullptr && journal_->keeps_bodies(); }
  Session* find_session(SessionId id);
  Job* find_job(std::uint64_t id) const;
  Job* reserved_by(SessionId session, std::uint64_t job_id) const;  // nullptr: not held by it
  Tube* tube_for(std::string_view name);  // creates; nullptr beyond max_tubes
  Tube* add_tube(std::string_view name);  // a new tube, whatever the limit
  void maybe_drop(Tube* tube);
  void make_ready(Job* job);
  // Adds the ready mark of a job that just became ready (Tube::ready_marks).
  void note_ready(const Job* job);
  void make_delayed(Job* job, Millis delay);
  // Sets a session's `role` (producer, worker) at its first put or reserve and counts the
  // session in `sessions` once, as beanstalkd's current-producers and current-workers.
  static void take_role(bool& role, std::uint64_t& sessions);
  // Delayed for `delay` when it is above 0, ready otherwise; then serves the waiting reserves.
  void place(Job* job, Millis delay);
  void take_out(Job* job);  // from its state's structures and timeout
  void reserve_for(Session* session, Job* job);
  Job* best_ready(const Session* session) const;
  bool deadline_soon(const Session* session) const;
  void start_wait(Session* session, std::optional<Millis> timeout);
  void stop_wait(Session* session);
  void serve_waiters();
  void deliver();
  // The deadlines on the wheel: schedule one at `when`, cancel one (an empty handle is ignored;
  // the handle is emptied), and what runs when each is due.
  LoopWheel::Handle schedule(Millis when, void (JobQueue::*due)(std::uint64_t), std::uint64_t key);
  void cancel(LoopWheel::Handle& handle);
  void job_due(std::uint64_t job_id);           // TTR expiry
  void delays_due(std::uint64_t tube_address);  // the tube's soonest delayed jobs
  void arm_delays(Tube* tube);              // the tube's delay timeout for its soonest delayed job
  void wait_due(std::uint64_t session_id);  // reserve timeout or DEADLINE_SOON
  void pause_due(std::uint64_t tube_address);
  bool journal(const JournalChange& change);
  Outcome refusal() const;  // the outcome of the journal's last refusal
  static JobCounters counters_of(const Job* job);
  void erase_job(Job* job);

  JobQueueLimits limits_;
  QueueJournal* journal_;
  ReserveListener* listener_ = nullptr;
  Millis now_;
  Millis granularity_{0};  // set_clock_granularity
  LoopWheel deadlines_;
  JobTable jobs_;
  Tube* restore_tube_ = nullptr;  // add_restored()'s last tube: neighbours mostly share one
  std::map<std::string, std::unique_ptr<Tube>, std::less<>> tubes_;
  std::list<Tube*> tubes_created_;  // the tubes in creation order
  std::unordered_map<SessionId, std::unique_ptr<Session>> sessions_;
  std::set<Tube*> tubes_with_waiters_;
  struct Ended {  // a blocked reserve that ended, to deliver
    SessionId session;
    Outcome outcome;
    std::uint64_t job_id;
  };
  std::vector<Ended> ended_;
  std::uint64_t next_id_ = 1;
  SessionId next_session_ = 1;
  std::uint64_t next_wait_seq_ = 1;
  std::uint64_t body_bytes_ = 0;
  std::uint64_t job_timeouts_ = 0, total_jobs_ = 0, total_sessions_ = 0;
  std::uint64_t producers_ = 0, workers_ = 0, waiting_ = 0;
  bool draining_ = false;
  bool delivering_ = false;
  QueueMetrics metrics_;
};

}  // namespace wheel::jobs
