// SPDX-License-Identifier: Apache-2.0
// Test support for the kill -9 test of wheel-jobs (tests/wheel_jobs_crash_test.cc): what the
// clients were told, and the verdict on what a restarted server holds.
//
// The load records every request it sent and every reply it got. A reply is an
// acknowledgement: INSERTED (the put is durable), DELETED (the delete is), RELEASED, BURIED,
// KICKED. After the SIGKILL every request without a reply is "unknown": it may or may not have
// happened. The check after the restart then requires, with `--fsync always`:
//   - every acknowledged put whose delete was neither acknowledged nor in flight: present, with
//     the exact body it was put with;
//   - every acknowledged delete: gone (checked at the next three restarts);
//   - a job whose delete was in flight: present with its exact body, or gone;
//   - a put without a reply: absent, or present with exactly the body that was sent (every body
//     names its put, so a job that is neither ours nor whole is caught);
//   - the state an acknowledged 1 h delay, release with 1 h delay or bury gave a job, unless a
//     later change of it was in flight: still delayed / buried;
//   - ids only grow: every INSERTED id is above every id the same connection saw before, and the
//     first put after a restart gets an id above every id ever seen.
// With `--fsync MS` (interval_ms > 0) the promise is weaker: only acknowledgements received
// more than MS + slack ms before the SIGKILL count as above; younger ones are treated as
// unknown (counted, so the report can say how many survived anyway).
//
// Threads: one thread (the test's).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace wheel_test {

// A body that names itself: "crash KEY LEN|" then LEN minus that many pseudo-random bytes
// (any byte, "\r\n" included) derived from KEY. The header is kept when `len` is shorter.
std::string crash_body(std::uint64_t key, std::size_t len);
// True when `body` is exactly crash_body(key, ...) for the key it names; sets *key.
bool parse_crash_body(const std::string& body, std::uint64_t* key);

// The state a job must be in after the restart, when known.
enum class Expect { kAny, kDelayed, kBuried };

struct CrashStats {
  std::uint64_t puts_acked = 0;          // acknowledged puts (all rounds)
  std::uint64_t deletes_acked = 0;       // acknowledged deletes (all rounds)
  std::uint64_t present_checked = 0;     // acknowledged live jobs found with their exact body
  std::uint64_t gone_checked = 0;        // acknowledged deletes found gone
  std::uint64_t states_checked = 0;      // delayed / buried states found as acknowledged
  std::uint64_t unknown_puts = 0;        // puts without a reply at a kill
  std::uint64_t unknown_puts_found = 0;  // ... of which the restarted server had (body exact)
  std::uint64_t young_acks = 0;          // --fsync MS: acks too young to be promised
  std::uint64_t young_acks_kept = 0;     // ... that survived anyway
  std::uint64_t losses = 0;              // broken promises (each one is also in failures())
};

class CrashModel {
 public:
  // interval_ms: 0 for --fsync always, else the MS of --fsync MS. slack_ms: how late a sync
  // may run after its interval on a loaded machine (only with interval_ms > 0).
  explicit CrashModel(std::int64_t interval_ms = 0, std::int64_t slack_ms = 0);

  // --- while the load runs (times are the test's milliseconds) ---
  // A put about to be sent: its key and body (registered as unknown until acknowledged).
  std::string new_put(std::size_t len, std::uint64_t* key);
  // INSERTED `id` for the put of `key`, on connection `conn`. `long_delay`: delayed 1 h.
  void put_acked(int conn, std::uint64_t key, std::uint64_t id, bool long_delay, std::int64_t now);
  // A job handed out by reserve: its body must be the one it was put with.
  void reserved(std::uint64_t id, const std::string& body);
  // A change of `id` (delete, release, bury, kick-job) was sent / answered.
  void change_sent(std::uint64_t id, bool is_delete);
  // `done`: the server did it (DELETED / RELEASED / BURIED / KICKED); else NOT_FOUND.
  void change_answered(std::uint64_t id, bool is_delete, bool done, Expect now_expect,
                       std::int64_t now);
  // Acknowledged live jobs, for picking deletes and kicks (`buried_only`: state kBuried).
  std::vector<std::uint64_t> live_ids(bool buried_only) const;
  std::size_t live_count() const;
  // The highest acknowledged live job with no delete in flight; 0 when none.
  std::uint64_t highest_live_id() const;

  // --- the SIGKILL and the check after the restart ---
  // Every request without a reply is unknown from now on. `kill_ms`: when the SIGKILL was sent.
  void crashed(std::int64_t kill_ms);
  // Ids to peek: every job the model has an opinion on, plus [scan_from, scan_to) where puts
  // without a reply may have landed.
  std::vector<std::uint64_t> ids_to_peek() const;
  // A peek's answer: found with `body`, or NOT_FOUND.
  void peeked(std::uint64_t id, bool found, const std::string& body);
  // Jobs whose state after the restart is known, with it.
  std::vector<std::pair<std::uint64_t, Expect>> states_to_check() const;
  // stats-job's "state:" for `id` ("delayed", "buried", ... or "" when NOT_FOUND).
  void state_seen(std::uint64_t id, const std::string& state);
  // INSERTED `id` for the first put after the restart (the probe; kept as a live 1 h job).
  void probe_put(std::uint64_t key, std::uint64_t id, std::int64_t now);
  // Ends the check: forgets unknown puts that did not come back; next round's scan starts here.
  void check_done();

  const CrashStats& stats() const { return stats_; }
  const std::vector<std::string>& failures() const { return failures_; }

 private:
  struct Job {
    std::string body;
    bool put_acked = false;
    std::int64_t put_ack_ms = 0;
    int deletes_in_flight = 0;
    int changes_in_flight = 0;  // release, bury, kick-job
    bool delete_acked = false;
    std::int64_t delete_ack_ms = 0;
    bool maybe_deleted = false;  // a delete was in flight at a kill
    Expect expect = Expect::kAny;
    std::int64_t expect_ms = 0;
    int gone_checks_left = 0;  // restarts at which an acknowledged delete is checked again
  };
  void fail(const std::string& what);
  bool promised(std::int64_t ack_ms) const;
  void saw_id(std::uint64_t id);

  std::int64_t interval_ms_;
  std::int64_t slack_ms_;
  std::int64_t kill_ms_ = 0;
  std::uint64_t next_key_ = 1;
  std::map<std::uint64_t, Job> jobs_;                       // by id
  std::unordered_map<std::uint64_t, std::string> unknown_;  // puts without a reply, by key
  std::map<int, std::uint64_t> last_id_of_conn_;
  std::uint64_t max_id_ = 0;     // the highest id seen anywhere
  std::uint64_t scan_from_ = 1;  // ids below were all accounted for at an earlier check
  std::uint64_t unknown_at_kill_ = 0;
  CrashStats stats_;
  std::vector<std::string> failures_;
};

}  // namespace wheel_test
