// SPDX-License-Identifier: Apache-2.0
#include "support/crash_model.h"

#include <charconv>

namespace wheel_test {
namespace {

std::uint64_t splitmix(std::uint64_t* state) {
  std::uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

constexpr int kGoneChecks = 3;  // restarts at which an acknowledged delete is checked
constexpr std::size_t kMaxFailureTexts = 50;

}  // namespace

std::string crash_body(std::uint64_t key, std::size_t len) {
  std::string body = "crash " + std::to_string(key) + " " + std::to_string(len) + "|";
  std::uint64_t state = key;
  while (body.size() < len) body.push_back(static_cast<char>(splitmix(&state) >> 56));
  return body;
}

bool parse_crash_body(const std::string& body, std::uint64_t* key) {
  if (!body.starts_with("crash ")) return false;
  const char* p = body.data() + 6;
  const char* end = body.data() + body.size();
  std::uint64_t k = 0;
  std::size_t len = 0;
  auto r = std::from_chars(p, end, k);
  if (r.ec != std::errc() || r.ptr == end || *r.ptr != ' ') return false;
  r = std::from_chars(r.ptr + 1, end, len);
  if (r.ec != std::errc() || r.ptr == end || *r.ptr != '|' || len > (std::size_t{1} << 30)) {
    return false;
  }
  if (crash_body(k, len) != body) return false;
  *key = k;
  return true;
}

CrashModel::CrashModel(std::int64_t interval_ms, std::int64_t slack_ms)
    : interval_ms_(interval_ms), slack_ms_(slack_ms) {}

void CrashModel::fail(const std::string& what) {
  ++stats_.losses;
  if (failures_.size() < kMaxFailureTexts) failures_.push_back(what);
}

bool CrashModel::promised(std::int64_t ack_ms) const {
  return interval_ms_ == 0 || ack_ms < kill_ms_ - interval_ms_ - slack_ms_;
}

void CrashModel::saw_id(std::uint64_t id) {
  if (id > max_id_) max_id_ = id;
}

std::string CrashModel::new_put(std::size_t len, std::uint64_t* key) {
  *key = next_key_++;
  std::string body = crash_body(*key, len);
  unknown_[*key] = body;
  return body;
}

void CrashModel::put_acked(int conn, std::uint64_t key, std::uint64_t id, bool long_delay,
                           std::int64_t now) {
  auto u = unknown_.find(key);
  if (u == unknown_.end()) return fail("INSERTED " + std::to_string(id) + " for no put");
  std::uint64_t& last = last_id_of_conn_[conn];
  if (id <= last) {
    fail("ids went down on one connection: " + std::to_string(id) + " after " +
         std::to_string(last));
  }
  last = id;
  Job& job = jobs_[id];
  if (!job.body.empty() && job.body != u->second) {
    fail("job " + std::to_string(id) + " was reserved with another body than its put's");
  }
  job.body = std::move(u->second);
  unknown_.erase(u);
  job.put_acked = true;
  job.put_ack_ms = now;
  if (long_delay && job.changes_in_flight == 0 && job.deletes_in_flight == 0) {
    job.expect = Expect::kDelayed;
    job.expect_ms = now;
  }
  ++stats_.puts_acked;
  saw_id(id);
}

void CrashModel::reserved(std::uint64_t id, const std::string& body) {
  saw_id(id);
  auto it = jobs_.find(id);
  if (it != jobs_.end() && !it->second.body.empty()) {
    if (it->second.delete_acked) fail("reserve handed out deleted job " + std::to_string(id));
    if (it->second.body != body) fail("reserve: job " + std::to_string(id) + " has another body");
    return;
  }
  // Its INSERTED may still be on its way on another connection.
  std::uint64_t key = 0;
  auto u = parse_crash_body(body, &key) ? unknown_.find(key) : unknown_.end();
  if (u == unknown_.end() || u->second != body) {
    return fail("reserve: job " + std::to_string(id) + " has a body no put sent");
  }
  jobs_[id].body = body;
}

void CrashModel::change_sent(std::uint64_t id, bool is_delete) {
  Job& job = jobs_[id];
  (is_delete ? job.deletes_in_flight : job.changes_in_flight)++;
  job.expect = Expect::kAny;
}

void CrashModel::change_answered(std::uint64_t id, bool is_delete, bool done, Expect now_expect,
                                 std::int64_t now) {
  Job& job = jobs_[id];
  (is_delete ? job.deletes_in_flight : job.changes_in_flight)--;
  if (!done) return;
  if (is_delete) {
    if (!job.delete_acked) ++stats_.deletes_acked;
    job.delete_acked = true;
    job.delete_ack_ms = now;
    job.gone_checks_left = kGoneChecks;
  } else if (job.changes_in_flight == 0 && job.deletes_in_flight == 0) {
    job.expect = now_expect;
    job.expect_ms = now;
  }
}

std::vector<std::uint64_t> CrashModel::live_ids(bool buried_only) const {
  std::vector<std::uint64_t> ids;
  for (const auto& [id, job] : jobs_) {
    if (!job.put_acked || job.delete_acked || job.maybe_deleted || job.deletes_in_flight > 0) {
      continue;
    }
    if (buried_only && (job.expect != Expect::kBuried || job.changes_in_flight > 0)) continue;
    ids.push_back(id);
  }
  return ids;
}

std::size_t CrashModel::live_count() const {
  std::size_t n = 0;
  for (const auto& [id, job] : jobs_) n += job.put_acked && !job.delete_acked;
  return n;
}

std::uint64_t CrashModel::highest_live_id() const {
  for (auto it = jobs_.rbegin(); it != jobs_.rend(); ++it) {
    const Job& job = it->second;
    if (job.put_acked && !job.delete_acked && !job.maybe_deleted && job.deletes_in_flight == 0) {
      return it->first;
    }
  }
  return 0;
}

void CrashModel::crashed(std::int64_t kill_ms) {
  kill_ms_ = kill_ms;
  for (auto& [id, job] : jobs_) {
    if (job.deletes_in_flight > 0) job.maybe_deleted = true;
    if (job.changes_in_flight > 0) job.expect = Expect::kAny;
    job.deletes_in_flight = 0;
    job.changes_in_flight = 0;
  }
  last_id_of_conn_.clear();
  unknown_at_kill_ = unknown_.size();
  stats_.unknown_puts += unknown_.size();
}

std::vector<std::uint64_t> CrashModel::ids_to_peek() const {
  std::vector<std::uint64_t> ids;
  for (const auto& [id, job] : jobs_) {
    if (id < scan_from_) ids.push_back(id);
  }
  // Ids are handed out one after another within a run, and at least one of this run's (the
  // last probe) was seen: every put without a reply got an id below max_id_ + unknown_at_kill_.
  for (std::uint64_t id = scan_from_; id <= max_id_ + unknown_at_kill_; ++id) ids.push_back(id);
  return ids;
}

void CrashModel::peeked(std::uint64_t id, bool found, const std::string& body) {
  const std::string name = "job " + std::to_string(id);
  auto it = jobs_.find(id);
  if (it == jobs_.end()) {  // an id no reply named: only a put without a reply may be there
    if (!found) return;
    std::uint64_t key = 0;
    auto u = parse_crash_body(body, &key) ? unknown_.find(key) : unknown_.end();
    if (u == unknown_.end() || u->second != body) {
      return fail(name + " is there but no unanswered put sent its body (" +
                  std::to_string(body.size()) + " bytes)");
    }
    Job& job = jobs_[id];
    job.body = body;
    job.put_acked = true;  // it is in the log now: it must stay
    job.put_ack_ms = kill_ms_;
    unknown_.erase(u);
    ++stats_.unknown_puts_found;
    return saw_id(id);
  }
  Job& job = it->second;
  if (found && !job.body.empty() && job.body != body) {
    fail(name + " came back with another body (" + std::to_string(body.size()) + " bytes, put " +
         std::to_string(job.body.size()) + ")");
  }
  if (job.delete_acked) {
    if (!found) {
      ++stats_.gone_checked;
      if (!promised(job.delete_ack_ms)) ++stats_.young_acks, ++stats_.young_acks_kept;
      if (--job.gone_checks_left <= 0) jobs_.erase(it);
      return;
    }
    if (promised(job.delete_ack_ms)) return fail(name + ": its acknowledged delete was undone");
    ++stats_.young_acks;
    job.delete_acked = false;  // a young delete lost: the job lives on
    return;
  }
  if (job.maybe_deleted || !job.put_acked) {
    if (!found) {
      if (job.maybe_deleted) {  // the delete happened: it must stay gone from now on
        job.delete_acked = true;
        job.delete_ack_ms = kill_ms_ - interval_ms_ - slack_ms_ - 1;
        job.gone_checks_left = kGoneChecks;
        job.maybe_deleted = false;
      } else {
        jobs_.erase(it);
      }
      return;
    }
    job.maybe_deleted = false;
    if (!job.put_acked) ++stats_.unknown_puts_found;
    job.put_acked = true;
    job.put_ack_ms = std::min(job.put_ack_ms, kill_ms_);
    return;
  }
  const bool promise = promised(job.put_ack_ms);
  if (!promise) ++stats_.young_acks, stats_.young_acks_kept += found;
  if (found) {
    ++stats_.present_checked;
    return;
  }
  if (promise) return fail(name + ": acknowledged put lost");
  jobs_.erase(it);
}

std::vector<std::pair<std::uint64_t, Expect>> CrashModel::states_to_check() const {
  std::vector<std::pair<std::uint64_t, Expect>> out;
  for (const auto& [id, job] : jobs_) {
    if (job.expect == Expect::kAny || !job.put_acked || job.delete_acked || job.maybe_deleted) {
      continue;
    }
    if (promised(job.expect_ms)) out.emplace_back(id, job.expect);
  }
  return out;
}

void CrashModel::state_seen(std::uint64_t id, const std::string& state) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return;
  const char* want = it->second.expect == Expect::kDelayed ? "delayed" : "buried";
  if (state != want) {
    return fail("job " + std::to_string(id) + " is '" + state + "' after the restart, not " + want);
  }
  ++stats_.states_checked;
}

void CrashModel::probe_put(std::uint64_t key, std::uint64_t id, std::int64_t now) {
  if (id <= max_id_) {
    fail("first id after the restart, " + std::to_string(id) + ", is not above " +
         std::to_string(max_id_) + ", an id seen before");
  }
  put_acked(-1, key, id, true, now);
}

void CrashModel::check_done() {
  unknown_.clear();
  unknown_at_kill_ = 0;
  scan_from_ = max_id_ + 1;
}

}  // namespace wheel_test
