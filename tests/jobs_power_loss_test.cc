// SPDX-License-Identifier: Apache-2.0
// Power loss at thousands of random cut points: a seeded workload (puts, releases, buries,
// deletes; small segments so that rotation and compaction run) on the fault-injecting file
// system dies at the n-th file operation; the power goes, keeping only what was synced plus a
// random, partly garbled part of each unsynced tail; then the log is opened again and checked:
// every acknowledged change is there, no job has a state it never had, ids keep growing.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <map>
#include <optional>
#include <random>
#include <thread>

#include "support/fault_injection_fs.h"
#include "support/job_log_on_fs.h"
#include "wheel/jobs/log/job_log.h"
#include "wheel/logger.h"

namespace wheel::jobs {
namespace {

using testing::FaultInjectionFs;

constexpr std::uint32_t kIntervalMs = 20;

// One job's versions, oldest first: nullopt = absent. acked = index of the last version the
// log acknowledged (-1: none, the job may be absent or any version).
struct History {
  std::vector<std::optional<PutRecord>> versions{std::nullopt};
  std::vector<JobLog::Lsn> lsns{0};
  std::vector<std::uint64_t> times{0};
  int acked = 0;  // the initial "absent" counts as acknowledged
};

struct Outcome {
  std::map<std::uint64_t, History> jobs;
  std::uint64_t max_id = 0;
  std::uint64_t compacted = 0;
};

// Runs the workload until it finishes or the file system dies. Acknowledgement follows the
// policy: kAlways - durable_lsn() covers the change; kInterval - a poll at least kIntervalMs
// after the change completed before the cut.
Outcome run_workload(FaultInjectionFs& fs, SyncPolicy policy, std::uint64_t seed,
                     bool threaded = false) {
  Outcome out;
  JobLogOptions o = testing::log_options(fs, 4096);
  o.sync = policy;
  o.sync_interval_ms = kIntervalMs;
  // Inline syncs make every cut point reproducible from the seed; the threaded variant checks
  // the sync thread too (its cut points land wherever the threads interleave).
  o.sync_thread = threaded;
  Recovered r;
  std::string error;
  auto log = JobLog::open(o, &r, &error);
  if (!log) return out;
  std::mt19937_64 rng(seed);
  std::vector<std::uint64_t> live;
  std::uint64_t now = 1000;
  std::uint64_t last_full_poll = 0;
  for (int batch = 0; batch < 120 && !fs.crashed(); ++batch) {
    const int n = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < n; ++i) {
      const auto pick = rng() % 10;
      JobLog::Lsn lsn = 0;
      if (live.empty() || pick < 5) {
        PutRecord job;
        if (log->allocate_id(&job.id)) break;
        out.max_id = std::max(out.max_id, job.id);
        job.priority = static_cast<std::uint32_t>(rng() % 1000);
        job.tube = "tube" + std::to_string(rng() % 3);
        job.body = std::string(rng() % 400, static_cast<char>('a' + rng() % 26));
        job.ttr_ms = 1000;
        if (log->put(job, &lsn)) break;
        live.push_back(job.id);
        auto& h = out.jobs[job.id];
        h.versions.push_back(job);
        h.lsns.push_back(lsn);
        h.times.push_back(now);
      } else {
        const std::size_t k = rng() % live.size();
        const std::uint64_t id = live[k];
        auto& h = out.jobs[id];
        if (pick < 8) {
          PutRecord job = *h.versions.back();
          job.state = static_cast<StoredState>(rng() % 3);
          job.priority = static_cast<std::uint32_t>(rng() % 1000);
          job.due_unix_ms = job.state == StoredState::kDelayed ? static_cast<std::int64_t>(now) : 0;
          if (log->change({id, job.state, job.priority, job.due_unix_ms, {}}, &lsn)) break;
          h.versions.push_back(job);
        } else {
          if (log->remove(id, &lsn)) break;
          live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
          h.versions.push_back(std::nullopt);
        }
        h.lsns.push_back(lsn);
        h.times.push_back(now);
      }
    }
    log->commit();
    if (threaded) {  // wait (bounded) for the sync, as a client waits for its reply
      for (int w = 0; w < 100000 && !fs.crashed() && log->durable_lsn() < log->last_lsn(); ++w) {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    }
    now += 1 + rng() % 5;
    log->poll(now);
    if (!fs.crashed()) last_full_poll = now;
    const JobLog::Lsn durable = log->durable_lsn();
    for (auto& [id, h] : out.jobs) {
      for (int v = h.acked + 1; v < static_cast<int>(h.versions.size()); ++v) {
        const bool acked = policy == SyncPolicy::kAlways ? h.lsns[v] <= durable
                           : policy == SyncPolicy::kInterval
                               ? h.times[v] + kIntervalMs <= last_full_poll
                               : false;
        if (acked) h.acked = v;
      }
    }
  }
  out.compacted = log->stats().compacted_segments;
  return out;
}

// Returns "" when the recovered log agrees with the history, else what is wrong.
std::string check(FaultInjectionFs& fs, const Outcome& out) {
  const JobLogOptions o = testing::log_options(fs, 4096);
  Recovered r;
  std::string error;
  auto log = JobLog::open(o, &r, &error);
  if (!log) return "open failed: " + error;
  if (r.next_id <= out.max_id) return "id " + std::to_string(r.next_id) + " would be reused";
  std::map<std::uint64_t, const PutRecord*> found;
  for (const auto& job : r.jobs) found[job.id] = &job;
  for (const auto& [id, h] : out.jobs) {
    auto it = found.find(id);
    bool ok = false;
    for (std::size_t v = static_cast<std::size_t>(h.acked); v < h.versions.size() && !ok; ++v) {
      const auto& want = h.versions[v];
      ok = it == found.end() ? !want.has_value() : want.has_value() && *want == *it->second;
    }
    if (!ok) {
      return "job " + std::to_string(id) +
             (it == found.end() ? " lost" : " has a state it never had or an older one") +
             " (acknowledged version " + std::to_string(h.acked) + " of " +
             std::to_string(h.versions.size() - 1) + ")";
    }
    found.erase(id);
  }
  if (!found.empty()) return "job " + std::to_string(found.begin()->first) + " was never put";
  return "";
}

struct Figures {
  int runs = 0;
  int failures = 0;
  std::string first_failure;
  std::uint64_t ops = 0;
  std::uint64_t compacted = 0;
};

Figures cut_many(SyncPolicy policy, int runs, bool ignore_sync, std::uint64_t seed,
                 bool threaded = false) {
  Figures f;
  std::mt19937_64 rng(seed);
  for (int i = 0; i < runs; ++i) {
    const std::uint64_t workload_seed = rng();
    FaultInjectionFs dry;
    const Outcome full = run_workload(dry, policy, workload_seed);
    f.ops = dry.ops();
    f.compacted += full.compacted;
    FaultInjectionFs fs;
    fs.set_ignore_sync(ignore_sync);
    fs.set_ops_until_crash(1 + rng() % dry.ops());
    const Outcome out = run_workload(fs, policy, workload_seed, threaded);
    fs.set_ignore_sync(false);
    fs.power_loss(rng, /*torn=*/true);
    const std::string problem = check(fs, out);
    ++f.runs;
    if (!problem.empty()) {
      if (f.failures++ == 0) f.first_failure = problem;
    }
  }
  return f;
}

class PowerLossTest : public ::testing::Test {
 protected:
  void SetUp() override { logger()->set_level(spdlog::level::off); }
  void TearDown() override { logger()->set_level(spdlog::level::info); }
};

TEST_F(PowerLossTest, AlwaysLosesNothingAcknowledged) {
  const Figures f = cut_many(SyncPolicy::kAlways, 2000, false, 1);
  EXPECT_EQ(f.failures, 0) << f.first_failure;
  EXPECT_GT(f.compacted, 0u) << "the workload must exercise compaction";
  std::printf("always: %d cut points, ~%llu file operations per run, %d failures\n", f.runs,
              static_cast<unsigned long long>(f.ops), f.failures);
}

TEST_F(PowerLossTest, AlwaysWithTheSyncThreadLosesNothingAcknowledged) {
  const Figures f = cut_many(SyncPolicy::kAlways, 300, false, 5, /*threaded=*/true);
  EXPECT_EQ(f.failures, 0) << f.first_failure;
}

TEST_F(PowerLossTest, IntervalLosesAtMostTheLastInterval) {
  const Figures f = cut_many(SyncPolicy::kInterval, 1500, false, 2);
  EXPECT_EQ(f.failures, 0) << f.first_failure;
  std::printf("interval %u ms: %d cut points, %d failures\n", kIntervalMs, f.runs, f.failures);
}

TEST_F(PowerLossTest, NeverStillRecoversAConsistentLog) {
  // Nothing is acknowledged as durable, but whatever survives is a state each job really had,
  // torn records are cut, and ids are not reused.
  const Figures f = cut_many(SyncPolicy::kNever, 500, false, 3);
  EXPECT_EQ(f.failures, 0) << f.first_failure;
}

TEST_F(PowerLossTest, SkippedFdatasyncIsCaught) {
  // The planted bug: the file system pretends to sync. The same check must now find losses.
  const Figures f = cut_many(SyncPolicy::kAlways, 300, true, 4);
  EXPECT_GT(f.failures, 0);
  std::printf("fdatasync skipped: %d of %d cut points lose acknowledged changes, e.g. %s\n",
              f.failures, f.runs, f.first_failure.c_str());
}

}  // namespace
}  // namespace wheel::jobs
