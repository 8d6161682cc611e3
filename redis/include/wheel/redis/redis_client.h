// SPDX-License-Identifier: Apache-2.0
// RedisClient: one connection to Redis on a libuv loop (hiredis's async API underneath),
// pipelined: any number of commands are in flight at once and their replies come back in the
// order sent. What hiredis leaves to its user is done here:
//  - reconnect: a lost or refused connection is retried with exponential backoff
//    (min_backoff doubling up to max_backoff); on each new connection AUTH (with a password)
//    and SELECT db run first and the on_connect hook re-issues what a connection needs (script
//    loads, subscriptions); a refused AUTH drops the connection and backs off;
//  - fail fast: while no connection is up (between a loss and the next attempt) a command fails
//    at once with an error reply "ERR redis unavailable: ..." instead of queueing;
//  - timeouts: a command without its reply after command_timeout drops the connection, so it
//    and every other command in flight fail with "ERR redis timeout ..." (their effect on Redis
//    is unknown, as for any lost reply), then the client reconnects;
//  - metrics: round-trip times, reconnects and failures by kind (metrics());
//  - Redis's reasons: every error reply is counted by its cause (redis_errors.h) and logged with
//    Redis's own message and a hint, at most one line per cause every error_log_interval
//    (reason_log.h: the first at once, then a count), so a replica's READONLY, a refused
//    password or a failing script shows in the log and not only as a failed command;
//  - scripts: eval() sends EVALSHA once the script is loaded (SCRIPT LOAD on connect) and EVAL
//    before; a NOSCRIPT reply (SCRIPT FLUSH, a restarted Redis) resends it as EVAL;
//  - replicas: with `replicas` > 0 every eval() of a script that changes jobs
//    (RedisScript::changes) is followed by WAIT replicas replica_timeout in the same pipeline,
//    and its caller gets the script's reply only once that many replicas acknowledged it; fewer
//    within the timeout fail it ("ERR not replicated ..."), though the primary has applied it,
//    as with a lost reply. Reads (peek, stats) never wait for replicas.
//  - following a primary: with a locator (set_locator; RedisSentinel is one) the client asks
//    where to connect before every connection attempt, confirms with ROLE that it reached a
//    primary, and asks again (relocate()) when told READONLY or when the locator says the
//    primary moved.
// Subscriber mode: subscribe() turns the connection into a pub/sub one (then only subscribe());
// subscriptions are renewed after every reconnect; messages sent while it was down are lost,
// which the caller covers with its own periodic scan.
//
// Ownership: the client owns its uv handles; stop() closes them (the loop finishes closing).
// Threads: loop thread only. Callbacks run on the loop thread, from inside hiredis (they may
// issue new commands, and may call stop()).
#pragma once

#include <uv.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "wheel/metrics_histogram.h"
#include "wheel/reason_log.h"
#include "wheel/redis/redis_endpoint.h"
#include "wheel/redis/redis_errors.h"

struct redisAsyncContext;

namespace wheel::jobs {

// A reply, copied out of hiredis. Errors (Redis's own, or the client's: unavailable, timeout,
// connection lost) are kError with the message in `str`.
struct RedisValue {
  enum class Type : std::uint8_t { kNil, kInteger, kString, kStatus, kError, kArray };
  Type type = Type::kNil;
  long long integer = 0;
  std::string str;
  std::vector<RedisValue> elements;

  bool is_error() const { return type == Type::kError; }
  static RedisValue error(std::string message);
};

using RedisCallback = std::function<void(const RedisValue&)>;

struct RedisClientOptions {
  RedisEndpoint endpoint;
  std::chrono::milliseconds command_timeout{3000};  // REQUIRES > 0
  std::chrono::milliseconds min_backoff{50};        // REQUIRES > 0
  std::chrono::milliseconds max_backoff{2000};      // REQUIRES >= min_backoff
  std::string name = "redis";                       // in log lines
  // eval() answers only once this many replicas have each script's writes (WAIT); 0: at once.
  std::uint32_t replicas = 0;                       // REQUIRES <= kMaxRedisReplicas
  std::chrono::milliseconds replica_timeout{1000};  // REQUIRES > 0, < command_timeout
  // The shortest gap between two log lines about one cause of Redis's error replies.
  std::chrono::milliseconds error_log_interval = kReasonLogInterval;  // REQUIRES > 0
};

inline constexpr std::uint32_t kMaxRedisReplicas = 100;

// Round trips of commands: 100 µs (loopback) to the 3 s default timeout and beyond.
inline constexpr std::array<double, 15> kRedisRoundTripBounds = {
    0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 3, 10};

// Why a command failed: Redis's own error reply; no connection (failed fast); no reply in
// command_timeout; the connection was lost with the command in flight.
enum class RedisFailure : std::uint8_t { kReply, kUnavailable, kTimeout, kLost };
inline constexpr std::size_t kRedisFailureKinds = 4;
// "reply", "unavailable", "timeout", "lost".
std::string_view redis_failure_name(RedisFailure kind);

// What a client counts for a scrape. Written on the loop thread; the histogram may be read
// from any thread, the counters on the loop thread only.
struct RedisClientMetrics {
  // Sent to answered, per command that got a reply (errors from Redis included).
  MetricsHistogram<kRedisRoundTripBounds.size()> round_trip{kRedisRoundTripBounds};
  std::uint64_t reconnects = 0;   // connections made after the first one
  std::uint64_t relocations = 0;  // relocate(): the primary moved (Sentinel, READONLY)
  std::uint64_t not_primary = 0;  // connections left because ROLE named no primary
  std::array<std::uint64_t, kRedisFailureKinds> failures{};
  std::uint64_t failed(RedisFailure kind) const { return failures[static_cast<std::size_t>(kind)]; }
  // Redis's error replies by cause (their sum is failures[kReply] plus the NOSCRIPTs, which are
  // resent and do not fail their command).
  std::array<std::uint64_t, kRedisErrorCauses> errors{};
  std::uint64_t errored(RedisErrorCause cause) const {
    return errors[static_cast<std::size_t>(cause)];
  }
};

// A Lua script; its SHA1 is learnt from SCRIPT LOAD. Must outlive the clients that use it.
// `changes`: false for a read (peek, stats), whose only writes are what any later script redoes
// (promoting what came due): eval() sends no WAIT after it.
struct RedisScript {
  explicit RedisScript(std::string text, bool changes = true)
      : text(std::move(text)), changes(changes) {}
  std::string text;
  std::string sha;  // empty until loaded
  bool changes = true;
};

class RedisClient {
 public:
  // Throws std::invalid_argument for options out of range. Does not connect yet.
  RedisClient(uv_loop_t* loop, RedisClientOptions options);
  ~RedisClient();  // REQUIRES: stop() was called and the loop ran since (handles closed)
  RedisClient(const RedisClient&) = delete;
  RedisClient& operator=(const RedisClient&) = delete;

  // Where to connect: `answer` gets the address, or nullopt and why there is none.
  using Locate = std::function<void(std::optional<RedisAddress>, std::string)>;
  using Locator = std::function<void(const Locate& answer)>;
  // Asks `locator` where to connect before every connection attempt, instead of taking the
  // endpoint's host and port (its user, password and database stay); no answer drops the
  // attempt and backs off. With `primary`, every new connection asks ROLE first and is dropped
  // (the locator asked again after the backoff) unless it reached a primary, and a READONLY
  // reply relocate()s. `locator` may answer at once or later; an answer for an attempt that
  // is over is ignored. Call before start().
  void set_locator(Locator locator, bool primary);
  // With a locator: drops the connection (its commands in flight fail with "ERR redis
  // unavailable: <why>"; their effect is unknown) and connects again at once, to `to` when
  // given (once: later attempts ask the locator), else asking the locator first; the backoff
  // starts over. Nothing before start() or after stop(), nor when `to` is where the client
  // is connected or connecting already.
  void relocate(const std::string& why, std::optional<RedisAddress> to = std::nullopt);

  // Connects (and keeps reconnecting until stop()).
  void start();
  // Fails every command in flight ("ERR redis client stopped"), closes the connection and the
  // timers; later commands fail at once. Idempotent.
  void stop();

  // Runs at each (re)connect attempt, once the connection's own first commands (AUTH, SELECT,
  // the preload() scripts' SCRIPT LOADs) are queued and before any other: what it issues is
  // written as soon as the socket connects, and fails if it does not (connected() tells). Issue
  // SCRIPT LOADs or subscriptions here.
  void set_on_connect(std::function<void()> hook) { on_connect_ = std::move(hook); }
  void preload(RedisScript* script) { scripts_.push_back(script); }

  // Sends one command (binary-safe arguments); `done` gets its reply or an error.
  void command(const std::vector<std::string>& args, RedisCallback done);
  // EVALSHA/EVAL of `script` with no keys and `args` as ARGV (then WAIT with replicas, if the
  // script changes jobs).
  void eval(RedisScript& script, const std::vector<std::string>& args, RedisCallback done);
  // The same with `keys` as KEYS (Redis Cluster routes a script by its keys, which must share
  // a slot).
  void eval(RedisScript& script, const std::vector<std::string>& keys,
            const std::vector<std::string>& args, RedisCallback done);
  // SUBSCRIBE `channel`; `on_message` gets each message's payload. Kept across reconnects.
  void subscribe(std::string channel, std::function<void(std::string_view)> on_message);

  // Runs `hook` once after the callbacks of all the replies that one read from Redis brought
  // (a pipelined batch) have run; delivering() is true during those callbacks. A caller that
  // answers its own clients from the callbacks may gather what it writes to each and write it in
  // `hook`, once per client. Empty: none. Not run for callbacks of failures raised elsewhere (a
  // timeout, stop()).
  void set_after_read(std::function<void()> hook) { after_read_ = std::move(hook); }
  bool delivering() const { return delivering_; }

  // After want_turn_end(), runs every hook added here once, before the loop next polls for I/O
  // (a uv_idle, which also keeps that poll from blocking), then writes what they sent to Redis
  // at once: a caller gathers the requests of one turn (all the clients' reads of one poll, the
  // callbacks of one read from Redis) into one command this way. want_turn_end() is false when
  // the client is not started or is stopped: nothing will run, send now.
  void add_turn_end(std::function<void()> hook) { turn_end_.push_back(std::move(hook)); }
  bool want_turn_end();

  bool connected() const { return state_ == State::kUp; }
  // Whether a command now is sent (connected, or connecting: written once the socket is up)
  // rather than failed at once (backing off after a failure, stopped).
  bool accepting() const { return state_ == State::kUp || state_ == State::kConnecting; }
  // Connection attempts so far: changes on every new attempt (a relocate() included).
  std::uint64_t attempts() const { return generation_; }
  // Where the client connects: the options' endpoint, with the located host and port.
  const RedisEndpoint& endpoint() const { return endpoint_; }
  std::uint64_t connects() const { return connects_; }       // successful connections so far
  std::size_t in_flight() const { return pending_.size(); }  // commands without a reply yet
  const RedisClientMetrics& metrics() const { return metrics_; }

 private:
  enum class State : std::uint8_t { kIdle, kLocating, kConnecting, kUp, kBackoff, kStopped };
  struct Pending;
  void connect();     // asks the locator (if any), then connect_to()
  void connect_to();  // to endpoint_
  void check_role();  // with a primary locator: ROLE on the new connection
  // Fails everything in flight, schedules a reconnect; logs `why` unless `told` (the reason log
  // has said it).
  void drop(const std::string& why, bool told = false);
  // Frees the connection, if any: the commands in flight fail with "unavailable: why".
  void close_connection(const std::string& why);
  void note_error(std::string_view message);  // an error reply from Redis: counted and logged
  void send(const std::vector<std::string>& args, std::unique_ptr<Pending> pending);
  struct Replicated;
  void eval_once(RedisScript& script, const std::vector<std::string>& keys,
                 const std::vector<std::string>& args, RedisCallback done,
                 std::shared_ptr<Replicated> replicated);
  void wait_replicas(std::shared_ptr<Replicated> replicated);
  void fail_soon(RedisCallback done, std::string why);
  void count_failure(RedisFailure kind) { ++metrics_.failures[static_cast<std::size_t>(kind)]; }
  void arm_timeout();
  void check_timeouts();
  void resubscribe();
  void load_scripts();
  static void on_reply(redisAsyncContext* ac, void* reply, void* privdata);
  static void on_message(redisAsyncContext* ac, void* reply, void* privdata);
  static void on_connected(const redisAsyncContext* ac, int status);
  static void on_disconnected(const redisAsyncContext* ac, int status);
  std::uint64_t now_ms() const;

  uv_loop_t* loop_;
  RedisClientOptions options_;
  RedisEndpoint endpoint_;  // options_.endpoint, at the located address
  Locator locator_;
  bool locate_primary_ = false;
  std::optional<RedisAddress> told_;  // relocate(why, to): the next attempt's address
  std::shared_ptr<char> life_ = std::make_shared<char>();  // a locator's answer checks it
  State state_ = State::kIdle;
  redisAsyncContext* ac_ = nullptr;
  uv_timer_t* retry_timer_ = nullptr;    // backoff; freed by its close callback
  uv_timer_t* timeout_timer_ = nullptr;  // oldest command's deadline
  std::chrono::milliseconds backoff_;
  std::deque<Pending*> pending_;  // in send order; owned (freed when their reply arrives)
  std::vector<RedisScript*> scripts_;
  struct Subscription {
    std::string channel;
    std::function<void(std::string_view)> on_message;
  };
  std::vector<std::unique_ptr<Subscription>> subscriptions_;
  std::function<void()> on_connect_;
  std::function<void()> after_read_;
  std::vector<std::function<void()>> turn_end_;
  uv_idle_t* turn_idle_ = nullptr;  // want_turn_end(); freed by its close callback
  bool turn_wanted_ = false;
  void on_turn_end();
  bool delivering_ = false;
  friend struct RedisReadScope;
  std::uint64_t connects_ = 0;
  std::uint64_t generation_ = 0;  // bumps on every connection, so stale callbacks are ignored
  std::string last_error_;
  bool timed_out_ = false;  // the current drop is a timeout (for the failure counts)
  RedisClientMetrics metrics_;
  ReasonLog errors_;  // Redis's error replies, by RedisErrorCause
};

}  // namespace wheel::jobs
