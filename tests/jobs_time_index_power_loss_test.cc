// SPDX-License-Identifier: Apache-2.0
// TimeIndex beside a real JobLog on the fault-injecting file system, cut at file operations
// of a seeded workload (250 cut points spread over its ~400 operations, 6 seeds; far puts and
// deletes, the index flushed both before and after the log's group commit, as an owner flushing on
// a timer would), then a power loss keeping a random, partly garbled part of each unsynced tail
// (one cut in four: a kill -9, which keeps it all). After it:
// - every entry the index holds names a put record the log recovered, with the same due time,
//   or a job deleted before the cut (the index's gone may lag the log's delete);
// - the index holds exactly what its last finished flush wrote, or what the flush the cut
//   stopped would have.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <random>

#include "support/fault_injection_fs.h"
#include "support/job_log_on_fs.h"
#include "wheel/jobs/log/job_log.h"
#include "wheel/jobs/log/time_index.h"

namespace wheel::jobs {
namespace {

using testing::FaultInjectionFs;

constexpr std::uint64_t kBucketMs = 60'000;
constexpr std::int64_t kBase = 1'800'000'000'000;

// Seeds take turns: a journal split at every flush, every few flushes, or never.
TimeIndexOptions index_options(FaultInjectionFs& fs, std::uint64_t seed) {
  TimeIndexOptions o;
  o.dir = "/tix";
  o.fs = &fs;
  o.bucket_ms = kBucketMs;
  o.journal_entries = seed % 3 == 0 ? 1 : seed % 3 == 1 ? 7 : 100'000;
  return o;
}

using State = std::map<std::uint64_t, std::int64_t>;  // the index's live jobs: id -> due

struct Event {
  bool put = true;
  std::uint64_t id = 0;
  std::int64_t due = 0;
  JobLog::Lsn lsn = 0;
};

struct Outcome {
  State flushed;                                 // after the last flush that returned success
  std::optional<State> cut_in;                   // what the flush the cut stopped would have left
  JobLog::Lsn durable = 0;                       // the log's durable_lsn() last seen
  std::map<std::uint64_t, JobLog::Lsn> deleted;  // id -> its delete's LSN
  std::uint64_t ops = 0;
};

State apply(State s, const std::vector<Event>& events, std::size_t from, std::size_t to) {
  for (std::size_t i = from; i < to; ++i) {
    if (events[i].put) {
      s[events[i].id] = events[i].due;
    } else {
      s.erase(events[i].id);
    }
  }
  return s;
}

Outcome run(FaultInjectionFs& fs, std::uint64_t seed, std::uint64_t cut) {
  Outcome out;
  JobLogOptions lo = testing::log_options(fs, 4096);
  lo.sync = SyncPolicy::kAlways;
  Recovered r;
  auto log = testing::open_log(lo, &r);
  TimeIndexRecovered tr;
  std::string error;
  auto index = TimeIndex::open(index_options(fs, seed), &tr, &error);
  EXPECT_TRUE(index) << error;
  if (!log || !index) return out;
  fs.set_ops_until_crash(cut);
  std::mt19937_64 rng(seed);
  std::vector<Event> events;
  std::size_t released = 0;  // events written by finished flushes
  std::vector<std::pair<std::uint64_t, std::int64_t>> live;
  auto flush = [&] {
    const JobLog::Lsn durable = log->durable_lsn();
    std::size_t upto = released;
    while (upto < events.size() && events[upto].lsn <= durable) ++upto;
    State would = apply(out.flushed, events, released, upto);
    if (index->flush(durable, 0)) {
      if (!out.cut_in && fs.crashed()) out.cut_in = would;
      return false;
    }
    out.flushed = std::move(would);
    released = upto;
    return true;
  };
  for (int batch = 0; batch < 30 && !fs.crashed(); ++batch) {
    const int n = 1 + static_cast<int>(rng() % 5);
    for (int i = 0; i < n; ++i) {
      JobLog::Lsn lsn = 0;
      if (live.empty() || rng() % 4 != 0) {
        PutRecord job;
        if (log->allocate_id(&job.id)) break;
        job.state = StoredState::kDelayed;
        job.due_unix_ms = kBase + static_cast<std::int64_t>(rng() % (6 * kBucketMs));
        job.tube = "far";
        job.body = std::string(rng() % 200, 'b');
        job.ttr_ms = 1000;
        LogPosition at = 0;
        if (log->put(job, &lsn, &at)) break;
        index->add({job.due_unix_ms, job.id, at}, lsn);
        events.push_back({true, job.id, job.due_unix_ms, lsn});
        live.emplace_back(job.id, job.due_unix_ms);
      } else {
        const std::size_t k = rng() % live.size();
        const auto [id, due] = live[k];
        if (log->remove(id, &lsn)) break;
        index->remove(due, id, lsn);
        events.push_back({false, id, due, lsn});
        out.deleted[id] = lsn;
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
      }
    }
    // An owner flushing on a timer: sometimes while the batch's records are not durable yet.
    if (rng() % 2 == 0 && !flush()) break;
    log->commit();
    if (rng() % 2 == 0 && !flush()) break;
  }
  out.ops = fs.ops();
  return out;
}

// "" when the index after the power loss agrees with the log and with its flushes.
std::string check(FaultInjectionFs& fs, std::uint64_t seed, const Outcome& out) {
  Recovered r;
  std::string error;
  auto log = JobLog::open(testing::log_options(fs, 4096), &r, &error);
  if (!log) return "log open failed: " + error;
  TimeIndexRecovered tr;
  auto index = TimeIndex::open(index_options(fs, seed), &tr, &error);
  if (!index) return "index open failed: " + error;
  std::map<std::uint64_t, std::int64_t> in_log;
  for (const auto& job : r.jobs) in_log[job.id] = job.due_unix_ms;
  State held;
  for (const auto& b : index->buckets()) {
    std::vector<TimeEntry> entries;
    if (auto ec = index->read_bucket(b.bucket, &entries)) return "read failed: " + ec.message();
    for (const auto& e : entries) held[e.id] = e.due_unix_ms;
  }
  if (index->live() != held.size()) return "live() disagrees with the buckets";
  for (const auto& [id, due] : held) {
    auto it = in_log.find(id);
    if (it != in_log.end() && it->second == due) continue;
    auto del = out.deleted.find(id);
    // Deleted, and the delete (appended before the cut) may have reached the disk: the gone
    // entry lags the log.
    if (it == in_log.end() && del != out.deleted.end()) continue;
    return "index entry for job " + std::to_string(id) + " names a put record not on disk";
  }
  if (held == out.flushed || (out.cut_in && held == *out.cut_in)) return "";
  return "the index holds " + std::to_string(held.size()) + " jobs; its last flush left " +
         std::to_string(out.flushed.size());
}

void run_cut_points(std::uint64_t seed, std::uint64_t points) {
  std::uint64_t total = 0;
  {
    FaultInjectionFs fs;
    total = run(fs, seed, 0).ops;
  }
  ASSERT_GT(total, 50u);
  int failures = 0;
  for (std::uint64_t p = 0; p < points && failures < 3; ++p) {
    const std::uint64_t cut = 1 + (p * total) / points;
    FaultInjectionFs fs;
    const Outcome out = run(fs, seed, cut);
    std::mt19937_64 rng(seed * 1000 + p);
    if (p % 4 == 3) {
      fs.process_death();  // a kill -9 instead: the page cache stays
    } else {
      fs.power_loss(rng, true);
    }
    const std::string why = check(fs, seed, out);
    if (!why.empty()) {
      ++failures;
      ADD_FAILURE() << "seed " << seed << " cut " << cut << " of " << total << ": " << why;
    }
  }
}

TEST(TimeIndexPowerLossTest, EveryCutPointOfAFarJobWorkload) {
  for (std::uint64_t seed = 1; seed <= 6; ++seed) run_cut_points(seed, 250);
}

}  // namespace
}  // namespace wheel::jobs
